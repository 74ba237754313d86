#!/bin/sh
# pprof-distance.sh [-v] [-a] A.pb.gz B.pb.gz: the total variation distance, in
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
# -a charges a leaf runtime.asyncPreempt to its caller, the function the
# preemption interrupted, in both profiles: runtime/pprof charges to
# asyncPreempt the SIGPROFs delivered right after a preemption signal (on
# the same return to user space, so the more the threads wait for a CPU the
# more of them: 7 % of a server's samples on a loaded 2-CPU machine, 16-45 %
# of a single busy goroutine's), time that the interrupted function spent;
# a sampler that reads the registers at its own instant (pmuprof, perf)
# finds asyncPreempt in well under 0.1 % of its samples.
# $PMUPROF names the pmuprof binary (default: the build next to this script).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PMUPROF=${PMUPROF:-$top/build/pmuprof}
verbose=0 preempt=0
while :; do
	case ${1:-} in
	-v) verbose=1 ;;
	-a) preempt=1 ;;
	-va | -av) verbose=1 preempt=1 ;;
	*) break ;;
	esac
	shift
done
if [ $# -ne 2 ]; then
	echo "usage: pprof-distance.sh [-v] [-a] A.pb.gz B.pb.gz" >&2
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
awk -v verbose="$verbose" -v preempt="$preempt" '
	{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";")
	  if (preempt && k > 1 && fr[k] == "runtime.asyncPreempt") k--
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
