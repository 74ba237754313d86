#!/bin/sh
# What --off-cpu costs a program that switches a lot (issue 18):
# tests/go/offcpu -pingpong N sends one byte back and forth N times between
# two threads over two blocking pipes (each round trip blocks each thread
# once) and prints the time it took.  Runs alternate, ROUNDS times:
#
#   none        no profiler
#   --off-cpu   pmuprof record --off-cpu (a sample at every switch: kernel
#               callchain, user registers and the 8 KiB stack copy)
#   perf -g     perf record -e context-switches -c 1 --switch-events -g
#               (the same events, frame-pointer callchains, no stack copy)
#   perf dwarf  the same with --call-graph dwarf,8192 (a stack copy like pmuprof's)
#
# Prints per mode the median of the program's own time, its slowdown
# against none, the times a second a thread blocked, the CPU time the
# profiler and the program took together less what the program took alone
# (/usr/bin/time), and the samples lost.  Usage: scripts/bench-offcpu.sh [N] [ROUNDS]
# (defaults 50000 5).  Needs root, a built pmuprof (make), the fixtures
# (scripts/fixtures.sh), and perf for its rows.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-50000} rounds=${2:-5}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
work=${PMUPROF_FIXTURES:-$top/tests/.work}
bin=$work/go126/offcpu
[ -x "$PMUPROF" ] || { echo "bench-offcpu: $PMUPROF missing: run make first" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench-offcpu: $bin missing: run scripts/fixtures.sh" >&2; exit 1; }
d=$(mktemp -d /tmp/pmuprof-bench-offcpu.XXXXXX)
trap 'rm -rf "$d"' EXIT
modes="none offcpu"
command -v perf >/dev/null 2>&1 && modes="$modes perfg perfdwarf"

for r in $(seq "$rounds"); do
	for m in $modes; do
		case $m in
		none) /usr/bin/time -f '%U %S' -o "$d/$m.$r.time" "$bin" -pingpong "$N" >"$d/$m.$r.out" 2>"$d/$m.$r.err" ;;
		offcpu) /usr/bin/time -f '%U %S' -o "$d/$m.$r.time" "$PMUPROF" record --off-cpu -o "$d/p.pb.gz" -- "$bin" -pingpong "$N" >"$d/$m.$r.out" 2>"$d/$m.$r.err" ;;
		perfg) /usr/bin/time -f '%U %S' -o "$d/$m.$r.time" perf record -e context-switches -c 1 --switch-events -g -o "$d/p.data" -- "$bin" -pingpong "$N" >"$d/$m.$r.out" 2>"$d/$m.$r.err" ;;
		perfdwarf) /usr/bin/time -f '%U %S' -o "$d/$m.$r.time" perf record -e context-switches -c 1 --switch-events --call-graph dwarf,8192 -o "$d/p.data" -- "$bin" -pingpong "$N" >"$d/$m.$r.out" 2>"$d/$m.$r.err" ;;
		esac
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print 0 }'; }
base=$(cat "$d"/none.*.out | awk '$1 == "pingpong" { print $3 / 1e9 }' | median)
printf '%-10s %9s %9s %12s %14s %14s\n' mode 'time s' slowdown 'blocks/s' 'extra CPU s' 'lost samples'
for m in $modes; do
	t=$(cat "$d"/$m.*.out | awk '$1 == "pingpong" { print $3 / 1e9 }' | median)
	# CPU time of the profiler and the program together, less the program's alone (none)
	cpu=$(for r in $(seq "$rounds"); do awk '{ print $1 + $2 }' "$d/$m.$r.time" | tail -1; done | median)
	ncpu=$(for r in $(seq "$rounds"); do awk '{ print $1 + $2 }' "$d/none.$r.time" | tail -1; done | median)
	lost=$(cat "$d"/$m.*.err | sed -n 's/.*lost \([0-9]*\) samples.*/\1/p; s/.*Lost \([0-9]*\) samples.*/\1/p' | median)
	printf '%-10s %9.2f %8.2fx %12.0f %14s %14s\n' "$m" "$t" "$(awk -v a="$t" -v b="$base" 'BEGIN { print b ? a / b : 0 }')" \
		"$(awk -v t="$t" -v n="$N" 'BEGIN { print t ? 2 * n / t : 0 }')" \
		"$(if [ "$m" = none ]; then echo -; else awk -v a="$cpu" -v b="$ncpu" 'BEGIN { printf "%.2f", a - b }'; fi)" "${lost:-0}"
done
echo "(medians of $rounds runs, $N round trips; $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg))"
