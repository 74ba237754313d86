#!/bin/sh
# What lock-contention profiling costs the target, side by side in one run
# (issue 19): tests/go/locks, ten goroutines contending for one sync.Mutex
# (-n rounds each, -hold held), prints the wall time of its work itself
# ("elapsed NS").
#
#   none           no profiler
#   locks          pmuprof record --locks (the default budget of probe hits/s)
#   locks-all      pmuprof record --locks --locks-max-rate 0 (every contended Lock: two traps)
#   runtime-rate1  the program's own SetMutexProfileFraction(1) and
#                  SetBlockProfileRate(1), writing both profiles at the end
#
# Prints the median work time of each, its slowdown against none, and for
# the pmuprof ways (attached to the program, so that /usr/bin/time counts
# pmuprof alone) pmuprof's own CPU time and peak memory, with the waits it
# recorded (scaled) against the contended Locks the program counted.
#
# Usage: scripts/bench-locks.sh [ROUNDS] [N]   (default 5 rounds, -n 600;
# rounds alternate the ways, each round starting with the next; medians).
# Needs root, a built pmuprof (make) and the fixtures.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
n=${2:-600}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
work=${PMUPROF_FIXTURES:-$top/tests/.work}
b=$work/go126/locks-stripped
[ -x "$b" ] || b=$work/go/locks-stripped
d=$(mktemp -d /tmp/pmuprof-bench-locks.XXXXXX)
mounted=
trap 'rm -rf "$d"; [ -n "$mounted" ] && umount "$mounted"' EXIT
[ -x "$PMUPROF" ] || { echo "bench-locks: $PMUPROF missing: run make first" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-locks: /usr/bin/time missing: apt-get install time" >&2; exit 1; }
sh "$top/scripts/fixtures.sh" >&2 || exit 1
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ] &&
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
	mounted=/sys/kernel/tracing
fi
el() { sed -n 's/^elapsed \([0-9]*\)$/\1/p' "$1"; }
run() { # WAY
	case $1 in
	none) "$b" -n "$n" -delay 500ms >"$d/out" ;;
	locks | locks-all)
		r=
		[ "$1" = locks-all ] && r="--locks-max-rate 0"
		# attached (the work starts after -delay): /usr/bin/time then measures pmuprof alone
		"$b" -n "$n" -delay 500ms >"$d/out" &
		p=$!
		sleep 0.1
		# shellcheck disable=SC2086
		/usr/bin/time -f "time %U %S %M" -o "$d/time" "$PMUPROF" record -q --locks $r -p $p -o "$d/l.pb.gz" 2>"$d/err"
		wait $p
		awk -v w="$1" '$1 == "time" { printf "%s-cpu %.0f\n%s-rss %d\n", w, ($2 + $3) * 1000, w, $4 }' "$d/time"
		w=$("$PMUPROF" report -i "$d/l.pb.gz" --sample-index contentions 2>/dev/null | sed -n 's/^# total contentions: \([0-9]*\)$/\1/p')
		echo "$1-waits ${w:-0}"
		;;
	runtime-rate1) "$b" -n "$n" -delay 500ms -rate 1 -prof "$d/mutex.pb.gz" -block "$d/block.pb.gz" >"$d/out" ;;
	esac
	echo "$1 $(el "$d/out")"
	sed -n 's/^truth [^ ]* [0-9]* [0-9]* [0-9]* \([0-9]*\)$/contended \1/p' "$d/out"
}
ways="none locks locks-all runtime-rate1"
for r in $(seq "$rounds"); do
	# each round starts with the next way: none first every time would favour it
	set -- $ways
	k=$(((r - 1) % 4))
	while [ $k -gt 0 ]; do
		w=$1
		shift
		set -- "$@" "$w"
		k=$((k - 1))
	done
	for w in "$@"; do run "$w"; done
done >"$d/res"
med() { awk -v w="$1" '$1 == w { print $2 }' "$d/res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] + 0 }'; }
base=$(med none)
echo "tests/go/locks -n $n ($(basename "$(dirname "$b")")), $rounds rounds, $(nproc) CPUs; contended Locks per run (median): $(awk '$1 == "contended" { s += $2; c++ } END { printf "%.0f", c ? s / (c / 2) : 0 }' "$d/res")"
echo "| way | work ms (median) | slowdown | pmuprof CPU ms | pmuprof peak RSS MiB | waits recorded (scaled) |"
echo "|---|---|---|---|---|---|"
for w in $ways; do
	m=$(med "$w")
	case $w in
	locks*) c=$(med "$w-cpu"); rss=$(med "$w-rss"); wt=$(med "$w-waits") ;;
	*) c=-; rss=-; wt=- ;;
	esac
	awk -v w="$w" -v m="$m" -v b="$base" -v c="$c" -v rss="$rss" -v wt="$wt" 'BEGIN {
		printf "| %s | %.0f | %.2fx | %s | %s | %s |\n", w, m / 1e6, b ? m / b : 0, c, rss == "-" ? "-" : sprintf("%.1f", rss / 1024), wt }'
done
echo "(the work time of a run varies by 10-20 % on a shared machine: compare medians of many rounds)"
