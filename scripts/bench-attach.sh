#!/bin/sh
# What attaching at 1 kHz costs a running process (issue 4), side by side in
# one run: tests/go/attach (three worker threads that check their own
# arithmetic) runs rounds on SIGUSR1; each round is unobserved, or under a
# `pmuprof record -p` attached just before it, or under `perf record -p`
# (no call graph), or under `perf record -a` (no call graph, every CPU:
# the kernel's own sampling cost without per-thread events), the ways
# alternating.
# Prints the median round time of each way and its ratio to unobserved.
#
# Usage: scripts/bench-attach.sh [ROUNDS-PER-WAY [SCALE [HZ]]]  (default 7, 2, 1000)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-7}
scale=${2:-2}
hz=${3:-1000}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
fx=${PMUPROF_FIXTURES:-$top/tests/.work}/go/attach
d=$(mktemp -d /tmp/pmuprof-bench-attach.XXXXXX)
trap 'kill $f 2>/dev/null; rm -rf "$d"' EXIT
[ -x "$PMUPROF" ] || { echo "bench-attach: $PMUPROF missing: run make first" >&2; exit 1; }
sh "$top/scripts/fixtures.sh" >&2 || exit 1
rounds=$((4 * n))
"$fx" -scale "$scale" -rounds "$rounds" >"$d/out" 2>&1 &
f=$!
until grep -q '^ready' "$d/out" 2>/dev/null; do sleep 0.05; done
r=0
for i in $(seq "$n"); do
	for way in none pmuprof perf perf-a; do
		r=$((r + 1))
		rec=
		case $way in
		pmuprof) "$PMUPROF" record -q -e cpu-clock -F "$hz" -p $f -o "$d/p.pb.gz" 2>>"$d/err" & rec=$! ;;
		perf) perf record -q -e cpu-clock -F "$hz" -p $f -o "$d/perf.data" 2>>"$d/err" >/dev/null & rec=$! ;;
		perf-a) perf record -q -e cpu-clock -F "$hz" -a -o "$d/perf.data" 2>>"$d/err" >/dev/null & rec=$! ;;
		esac
		[ -n "$rec" ] && sleep 0.3 # attached (pmuprof attaches in ~10 ms, perf in ~100)
		kill -USR1 $f
		until grep -q "^round $r " "$d/out"; do sleep 0.02; done
		if [ -n "$rec" ]; then
			kill -INT $rec
			wait $rec
		fi
		echo "$way $(sed -n "s/^round $r .*elapsed=\([0-9.]*\)$/\1/p" "$d/out")" >>"$d/res"
		sleep 0.2
	done
done
grep -q MISMATCH "$d/out" && echo "bench-attach: the fixture's arithmetic went wrong" >&2
med() { awk -v w="$1" '$1 == w { print $2 }' "$d/res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(med none)
echo "| way ($hz Hz, $n rounds each, scale $scale) | median round (s) | ratio |"
echo "|---|---|---|"
for w in none pmuprof perf perf-a; do
	m=$(med $w)
	echo "| $w | $m | $(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.3f", a / b }') |"
done
echo "(every round: $(awk '{ printf "%s %s, ", $1, $2 }' "$d/res"))"
