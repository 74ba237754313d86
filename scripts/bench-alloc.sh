#!/bin/sh
# What allocation profiling costs the target, side by side in one run
# (issue 20): tests/go/benchalloc allocates -mb megabytes in small and
# some larger objects on one goroutine (a core left for the profiler on a
# 2-core machine) and prints the time it took.  The runtime's own heap
# sampling (512 KiB) is on in every case.
#
#   none                 no profiler
#   --alloc              pmuprof record --alloc -- benchalloc (a trap per sampled allocation)
#   --inuse              pmuprof record --inuse -- benchalloc (the runtime's heap records read
#                        from outside every 100 ms: no trap, the target never stopped)
#   heapprof 1s, 100ms   the program reads its own heap profile that often
#                        (runtime/pprof's allocs profile, as a net/http/pprof scrape)
#
# Prints the median CPU time of each, the allocation rate without a
# profiler (MB per CPU second), and the slowdown per 100 MB/s allocated:
# (cpu / none - 1) / (rate / 100 MB/s).
#
# Usage: scripts/bench-alloc.sh [ROUNDS] [MB]   (default 5 rounds of 1500 MB;
# rounds alternate the ways, each round starting with the next; medians).  Needs root, a built pmuprof (make)
# and the fixtures.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
mb=${2:-1500}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
work=${PMUPROF_FIXTURES:-$top/tests/.work}
b=$work/go126/benchalloc
[ -x "$b" ] || b=$work/go/benchalloc
d=$(mktemp -d /tmp/pmuprof-bench-alloc.XXXXXX)
mounted=
trap 'rm -rf "$d"; [ -n "$mounted" ] && umount "$mounted"' EXIT
[ -x "$PMUPROF" ] || { echo "bench-alloc: $PMUPROF missing: run make first" >&2; exit 1; }
sh "$top/scripts/fixtures.sh" >&2 || exit 1
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ] &&
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
	mounted=/sys/kernel/tracing
fi
ns() { sed -n 's/^benchalloc: .*, cpu \([0-9]*\) ns$/\1/p' "$1"; }
run() { # WAY
	case $1 in
	none) "$b" -mb "$mb" -workers 1 >"$d/out" ;;
	--alloc)
		"$PMUPROF" record -q --alloc -o "$d/a.pb.gz" -- "$b" -mb "$mb" -workers 1 >"$d/out" 2>"$d/err"
		s=$(gzip -dc "$d/a.pb.gz" | strings | sed -n 's/.*alloc: \([0-9]*\) allocations sampled.*/\1/p')
		echo "samples ${s:-0}"
		;;
	--inuse) "$PMUPROF" record -q --inuse -o "$d/i.pb.gz" -- "$b" -mb "$mb" -workers 1 >"$d/out" 2>"$d/err" ;;
	heapprof-1s) "$b" -mb "$mb" -workers 1 -heapprof 1s >"$d/out" ;;
	heapprof-100ms) "$b" -mb "$mb" -workers 1 -heapprof 100ms >"$d/out" ;;
	esac
	echo "$1 $(ns "$d/out")"
}
ways="none --alloc --inuse heapprof-1s heapprof-100ms"
for r in $(seq "$rounds"); do
	# each round starts with the next way: none first every time would favour it
	set -- $ways
	k=$(((r - 1) % 5))
	while [ $k -gt 0 ]; do
		w=$1
		shift
		set -- "$@" "$w"
		k=$((k - 1))
	done
	for w in "$@"; do run "$w"; done
done >"$d/res"
med() { awk -v w="$1" '$1 == w { print $2 }' "$d/res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(med none)
rate=$(awk -v n="$base" -v mb="$mb" 'BEGIN { printf "%.0f", mb / (n / 1e9) }')
echo "benchalloc -mb $mb -workers 1 ($(basename "$(dirname "$b")")), $rounds rounds: $rate MB per CPU second allocated without a profiler"
echo "| way | CPU ms (median) | slowdown | per 100 MB/s allocated |"
echo "|---|---|---|---|"
for w in $ways; do
	m=$(med "$w")
	awk -v w="$w" -v m="$m" -v b="$base" -v r="$rate" 'BEGIN { s = 100 * (m / b - 1)
		printf "| %s | %.0f | %+.1f %% | %+.2f %% |\n", w, m / 1e6, s, s / (r / 100) }'
done
awk -v m="$(med --alloc)" -v b="$base" -v n="$(med samples)" 'BEGIN {
	printf "(--alloc: %d allocations sampled per run, median: %.1f us of the target'"'"'s CPU each)\n", n, n ? (m - b) / n / 1e3 : 0 }'
echo "(the CPU time of a run varies by 10-20 % on a shared machine: compare medians of many rounds)"
