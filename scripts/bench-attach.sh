#!/bin/sh
# What attaching at 1 kHz costs a running process (issue 4), side by side in
# one run: tests/go/attach (three worker threads that check their own
# arithmetic) runs rounds on SIGUSR1; each round is unobserved or has a
# recorder attached just before it, the ways alternating:
#   none          no recorder
#   pmuprof       pmuprof record -p (defaults: 8 KiB stack copy, kernel callchain)
#   pmuprof-nocc  pmuprof record -p --no-callchain
#   perf-p        perf record -p (per-thread events, no call graph)
#   perf-a        perf record -a (per-CPU events, no call graph): the kernel's
#                 own cost of sampling, nothing else
#   perf-a-g      perf record -a -g (per-CPU, frame-pointer call graph)
# Prints the median round time of each way, its ratio to unobserved and the
# recorder's median CPU time per round.
#
# By default the fixture runs on CPU 0 and the recorders on CPU 1 (PIN=0:1),
# so a round measures what the target itself pays -- the kernel's work in
# its context -- and not how the recorder's CPU time competes with it on a
# saturated machine (PIN=none for that: every cycle of the recorder then
# comes out of the target's rounds, and the rounds are noisier).
#
# Usage: scripts/bench-attach.sh [ROUNDS-PER-WAY [SCALE [HZ]]]  (default 7, 1, 1000)
#        WAYS="none pmuprof perf-a" PIN=none scripts/bench-attach.sh ...
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-7}
scale=${2:-1}
hz=${3:-1000}
ways=${WAYS:-none pmuprof pmuprof-nocc perf-a perf-a-g}
pin=${PIN:-0:1}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
fx=${PMUPROF_FIXTURES:-$top/tests/.work}/go/attach
d=$(mktemp -d /tmp/pmuprof-bench-attach.XXXXXX)
f=
trap 'kill $f 2>/dev/null; rm -rf "$d"' EXIT
[ -x "$PMUPROF" ] || { echo "bench-attach: $PMUPROF missing: run make first" >&2; exit 1; }
sh "$top/scripts/fixtures.sh" >&2 || exit 1
tpin='' rpin=''
if [ "$pin" != none ] && [ "$(nproc)" -ge 2 ]; then
	tpin="taskset -c ${pin%%:*}"
	rpin="taskset -c ${pin#*:}"
else
	pin=none
fi
nways=$(echo $ways | wc -w)
$tpin "$fx" -scale "$scale" -rounds $((nways * n)) >"$d/out" 2>&1 &
f=$!
until grep -q '^ready' "$d/out" 2>/dev/null; do sleep 0.05; done
r=0
for _ in $(seq "$n"); do
	for way in $ways; do
		r=$((r + 1))
		rec=
		case $way in
		none) ;;
		pmuprof) $rpin "$PMUPROF" record -q -e cpu-clock -F "$hz" -p $f -o "$d/p.pb.gz" 2>>"$d/err" & rec=$! ;;
		pmuprof-nocc) $rpin "$PMUPROF" record -q -e cpu-clock -F "$hz" --no-callchain -p $f -o "$d/p.pb.gz" 2>>"$d/err" & rec=$! ;;
		perf-p) $rpin perf record -q -e cpu-clock -F "$hz" -p $f -o "$d/perf.data" 2>>"$d/err" >/dev/null & rec=$! ;;
		perf-a) $rpin perf record -q -e cpu-clock -F "$hz" -a -o "$d/perf.data" 2>>"$d/err" >/dev/null & rec=$! ;;
		perf-a-g) $rpin perf record -q -g -e cpu-clock -F "$hz" -a -o "$d/perf.data" 2>>"$d/err" >/dev/null & rec=$! ;;
		*) echo "bench-attach: unknown way '$way'" >&2; exit 2 ;;
		esac
		[ -n "$rec" ] && sleep 0.3 # attached (pmuprof attaches in ~10 ms, perf in ~100)
		kill -USR1 $f
		until grep -q "^round $r " "$d/out"; do sleep 0.02; done
		cpu=0
		if [ -n "$rec" ]; then
			# the recorder's CPU time (utime + stime, clock ticks) before it stops
			cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' /proc/$rec/stat 2>/dev/null)
			kill -INT $rec 2>/dev/null
			wait $rec
		fi
		echo "$way $(sed -n "s/^round $r .*elapsed=\([0-9.]*\)$/\1/p" "$d/out") ${cpu:-0}" >>"$d/res"
		sleep 0.2
	done
done
grep -q MISMATCH "$d/out" && echo "bench-attach: the fixture's arithmetic went wrong" >&2
med() { awk -v w="$1" -v c="$2" '$1 == w { print $c }' "$d/res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(med none 2)
echo "| way ($hz Hz, $n rounds each, scale $scale, pinned $pin) | median round (s) | ratio | recorder CPU per round (ms) |"
echo "|---|---|---|---|"
for w in $ways; do
	m=$(med "$w" 2)
	echo "| $w | $m | $(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.3f", a / b }') | $(med "$w" 3) |"
done
echo "(every round: $(awk '{ printf "%s %s, ", $1, $2 }' "$d/res"))"
