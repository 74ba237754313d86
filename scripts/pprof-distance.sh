#!/bin/sh
# pprof-distance.sh [-v] A.pb.gz B.pb.gz: the total variation distance, in
# percentage points, between the flat (self) distributions by function of
# two CPU profiles: half the sum over functions of |share in A - share in
# B|, where a function's share is the part of the profile's samples whose
# leaf it is.  0 means the same distribution, 100 nothing in common.
#
# Either file may be pmuprof's or Go's own runtime/pprof profile: both are
# read by `pmuprof report --folded --no-kernel`, so kernel frames (record
# --kernel) are folded into the Go frame that entered the kernel, as
# runtime/pprof shows system calls, and inlined frames are expanded alike.
# -v also prints the ten functions that differ most (share in A, in B).
# $PMUPROF names the pmuprof binary (default: the build next to this script).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PMUPROF=${PMUPROF:-$top/build/pmuprof}
verbose=0
if [ "${1:-}" = -v ]; then
	verbose=1
	shift
fi
if [ $# -ne 2 ]; then
	echo "usage: pprof-distance.sh [-v] A.pb.gz B.pb.gz" >&2
	exit 2
fi
tmp=$(mktemp -d /tmp/pprof-distance.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for f in "$1" "$2"; do
	[ -r "$f" ] || { echo "pprof-distance.sh: cannot read $f" >&2; exit 1; }
done
"$PMUPROF" report --no-kernel --folded -i "$1" >"$tmp/a" || { echo "pprof-distance.sh: pmuprof report cannot read $1" >&2; exit 1; }
"$PMUPROF" report --no-kernel --folded -i "$2" >"$tmp/b" || { echo "pprof-distance.sh: pmuprof report cannot read $2" >&2; exit 1; }
# folded lines: "root;...;leaf COUNT"; function names may hold spaces
awk -v verbose="$verbose" '
	{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";")
	  if (FILENAME == ARGV[1]) { a[fr[k]] += n; ta += n } else { b[fr[k]] += n; tb += n }
	  seen[fr[k]] = 1 }
	END {
		if (ta == 0 || tb == 0) { print "pprof-distance.sh: a profile has no samples" > "/dev/stderr"; exit 1 }
		for (f in seen) { d = a[f] / ta - b[f] / tb; if (d < 0) d = -d; s += d; diff[f] = d }
		printf "%.1f\n", 50 * s
		if (verbose) {
			for (i = 0; i < 10; i++) {
				best = ""; bd = -1
				for (f in diff) if (diff[f] > bd) { bd = diff[f]; best = f }
				if (best == "" || bd <= 0) break
				printf "  %6.2f %6.2f  %s\n", 100 * a[best] / ta, 100 * b[best] / tb, best
				delete diff[best]
			}
		}
	}' "$tmp/a" "$tmp/b"
