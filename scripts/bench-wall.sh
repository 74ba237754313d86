#!/bin/sh
# What --wall costs, side by side in one run of one program (issue 18):
# tests/gomod/wallbench keeps G goroutines waiting (nine in ten in a channel
# receive, one in ten in a 100 ms sleep loop) while one worker per CPU does
# fixed units of work and prints how many it did every 250 ms.  Its phases
# alternate, ROUNDS times:
#
#   none      no profiler
#   --wall    pmuprof record --wall=HZ -e cpu-clock -F 10 -p PID, attached from outside
#   fgprof    fgprof inside the program (github.com/felixge/fgprof, its fixed 99 Hz,
#             fetched through the module proxy when the program is built)
#
# Prints per phase the target's units of work a second (median of the 250 ms
# windows past the first 500 ms of each phase), its slowdown against none,
# and pmuprof's CPU per snapshot (from the profile's comments) and in all
# (/usr/bin/time).  Usage: scripts/bench-wall.sh [G] [HZ] [ROUNDS] [SECS]
# (defaults 10000 20 3 4).  Needs root, a built pmuprof (make) and Go 1.26
# (/usr/local/go) with the module proxy reachable.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
G=${1:-10000} HZ=${2:-20} rounds=${3:-3} secs=${4:-4}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
work=${PMUPROF_FIXTURES:-$top/tests/.work}
GO=${GO:-/usr/local/go/bin/go}
[ -x "$PMUPROF" ] || { echo "bench-wall: $PMUPROF missing: run make first" >&2; exit 1; }
d=$(mktemp -d /tmp/pmuprof-bench-wall.XXXXXX)
trap 'rm -rf "$d"' EXIT
bin=$work/gomod/wallbench
mkdir -p "$work/gomod"
(cd "$top/tests/gomod/wallbench" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GO111MODULE=on \
	GOPATH="$work/gopath" GOCACHE="$work/gocache-mod" "$GO" build -o "$bin" .) ||
	{ echo "bench-wall: cannot build tests/gomod/wallbench (module proxy?)" >&2; exit 1; }

phases=
for _ in $(seq "$rounds"); do phases="$phases none:$secs ext:$secs fgprof:$secs"; done
"$bin" "$G" $phases none:1 >"$d/out" &
pid=$!
k=0
for _ in $(seq "$rounds"); do
	k=$((k + 1))
	# wait for this round's ext phase, then attach for it
	until [ "$(grep -c '^phase ext' "$d/out")" -ge $k ]; do sleep 0.05; done
	/usr/bin/time -f "%U %S" -o "$d/time.$k" "$PMUPROF" record -q -e cpu-clock -F 10 --wall="$HZ" \
		-p $pid --duration "$(echo "$secs - 0.2" | bc)" -o "$d/w$k.pb.gz" 2>"$d/err.$k"
	"$PMUPROF" report -i "$d/w$k.pb.gz" --sample-index wall 2>/dev/null |
		sed -n 's/.*--wall [0-9]* Hz: \([0-9]*\) snapshots.*CPU \([0-9.]*\) ms average, \([0-9.]*\) ms most.*/\1 \2 \3/p' >"$d/snap.$k"
done
wait $pid

# the units a second of each phase: the 250 ms windows from 500 ms past its start to its end
awk '
	$1 == "phase" { if (cur != "") { ends[np] = $3 }; cur = $2; np++; name[np] = $2; beg[np] = $3; next }
	$1 == "ops" { t[++no] = $2; v[no] = $3 }
	END {
		for (p = 1; p <= np; p++) {
			if (name[p] == "end") continue
			for (i = 1; i <= no; i++)
				if (t[i] - 250 >= beg[p] + 500 && t[i] <= ends[p]) print name[p], v[i] * 4
		}
	}' "$d/out" | sort -k1,1 -k2,2n >"$d/rates"
med() { awk -v n="$1" '$1 == n { v[++k] = $2 } END { if (!k) { print 0; exit } print (k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2) }' "$d/rates"; }
none=$(med none)
printf '%-10s %14s %10s\n' phase "units/s (med)" slowdown
for p in none ext fgprof; do
	m=$(med $p)
	label=$p
	[ $p = ext ] && label="--wall=$HZ"
	[ $p = fgprof ] && label="fgprof 99Hz"
	awk -v l="$label" -v m="$m" -v n="$none" 'BEGIN { printf "%-10s %14.0f %9.1f%%\n", l, m, n ? 100 * (n - m) / n : 0 }'
done
echo "# pmuprof --wall=$HZ with $G goroutines, per round: snapshots, CPU per snapshot (average, most), pmuprof CPU user+sys"
for k in $(seq "$rounds"); do
	echo "round $k: $(cat "$d/snap.$k") $(awk '{ printf "%.2f s", $1 + $2 }' "$d/time.$k")"
done
