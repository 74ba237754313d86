#!/bin/sh
# What each way of following goroutine creators costs the target, side by
# side in one run (issue 6): tests/go/spawn creates 400 000 short
# goroutines from 4 creators and prints the nanoseconds per goroutine.
#
#   none                   no profiler
#   tracebackancestors     GODEBUG=tracebackancestors=8 alone (the runtime's cost)
#   launch --creators      pmuprof record --creators -- spawn (the creation probe)
#   attach --creators=1    pmuprof record --creators=1 -p (the probe, one level kept)
#   attach --creators      pmuprof record --creators -p (the probe)
#   attach --creators-max-rate 1000
#                          the probe held to 1 000 hits a second (watching
#                          part of the time, at least 5 % of it)
#
# Usage: scripts/bench-creators.sh [ROUNDS]   (default 5; rounds alternate the ways;
# medians are printed).  Needs root, a built pmuprof (make) and the fixtures.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
work=${PMUPROF_FIXTURES:-$top/tests/.work}
sp=$work/go/spawn
d=$(mktemp -d /tmp/pmuprof-bench-creators.XXXXXX)
trap 'rm -rf "$d"; [ -n "$mounted" ] && umount "$mounted"' EXIT
mounted=
[ -x "$PMUPROF" ] || { echo "bench-creators: $PMUPROF missing: run make first" >&2; exit 1; }
sh "$top/scripts/fixtures.sh" >&2 || exit 1
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ] &&
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
	mounted=/sys/kernel/tracing
fi
# the creations the probe saw in the last attach
seen() { gzip -dc "$d/a.pb.gz" | strings | sed -n 's/.*creators: \([0-9]*\) goroutine creations seen.*/\1/p' | grep . || echo 0; }
ns() { sed -n 's/.*: \([0-9]*\) ns each$/\1/p' "$1"; }
attach() { # creators-option...
	"$sp" -wait 400ms >"$d/out" &
	pid=$!
	sleep 0.1
	"$PMUPROF" record -q -e cpu-clock -F 1000 "$@" -p $pid -o "$d/a.pb.gz" 2>"$d/err"
	wait $pid
	ns "$d/out"
}
for _ in $(seq "$rounds"); do
	"$sp" -wait 400ms >"$d/out"
	echo "none $(ns "$d/out")"
	GODEBUG=tracebackancestors=8 "$sp" -wait 400ms >"$d/out"
	echo "tracebackancestors $(ns "$d/out")"
	"$PMUPROF" record -q -e cpu-clock -F 1000 --creators -o "$d/l.pb.gz" -- "$sp" -wait 400ms >"$d/out" 2>"$d/err"
	echo "launch--creators $(ns "$d/out")"
	echo "attach--creators=1 $(attach --creators=1)"
	echo "attach--creators $(attach --creators)"
	echo "seen $(seen)"
	echo "attach--creators-max-rate=1000 $(attach --creators-max-rate 1000)"
	echo "seenb $(seen)"
done >"$d/res"
echo "| way | ns per goroutine (median of $rounds) | added per creation |"
echo "|---|---|---|"
base=$(awk '$1 == "none" { print $2 }' "$d/res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
for w in none tracebackancestors launch--creators attach--creators=1 attach--creators attach--creators-max-rate=1000; do
	m=$(awk -v w="$w" '$1 == w { print $2 }' "$d/res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	echo "| $(echo "$w" | sed 's/--/ --/') | $m | $((m - base)) ns |"
done
echo "(attach --creators: $(awk '$1 == "seen" { print $2 }' "$d/res" | tail -1) of 400000 creations seen by the probe in the last round; with --creators-max-rate 1000: $(awk '$1 == "seenb" { print $2 }' "$d/res" | tail -1))"
