#!/bin/sh
# Faults: threads created and destroyed at a high rate (thousands per second)
# for 5 s; one in 8 spins 1 ms so that churned threads are sampled too.
# pmuprof must keep up (finish on time), write a readable, complete profile
# with the churned threads' samples in main.threadBody, and stay small.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

out=$T/prof.pb.gz
tm=
[ -x /usr/bin/time ] && tm="/usr/bin/time -f rss=%M -o $T/time"
t0=$(now_ms)
$tm "$PMUPROF" record -e cpu-clock -o "$out" -- \
	"$F" -mode threads -secs 5 >"$T/o" 2>"$T/e"
rc=$?
dt=$(($(now_ms) - t0))
if [ $rc -eq 0 ]; then pass status; else fail status "exit $rc: $(head -2 "$T/e" | tr '\n' '|')"; fi
if [ $dt -lt 9000 ]; then pass on-time; else fail on-time "took $dt ms for a 5 s run"; fi
n=$(sed -n 's/^threads //p' "$T/o")
if [ -n "$n" ] && [ "$n" -ge 2500 ]; then pass churn; else fail churn "only '$n' threads in 5 s"; fi
if ! "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
	fail readable "$(head -1 "$T/f.err")"
	exit 0
fi
pass readable
got=$(folded_total "$T/f")
if [ "$(sample_count "$T/e")" = "$got" ] && [ "$got" -ge 100 ]; then pass complete; else fail complete "summary '$(sample_count "$T/e")', profile $got"; fi
s=$(awk '/;main\.threadBody/ { s += $NF } { t += $NF } END { if (t) printf "%d\n", 100 * s / t; else print 0 }' "$T/f")
if [ "$s" -ge 70 ]; then pass thread-samples; else fail thread-samples "main.threadBody in $s % of samples"; fi
if [ -z "$tm" ]; then
	skip memory "no /usr/bin/time"
else
	rss=$(sed -n 's/^rss=\([0-9]*\)$/\1/p' "$T/time")
	if [ -n "$rss" ] && [ "$rss" -lt 200000 ]; then pass memory; else fail memory "max RSS ${rss:-?} KiB"; fi
fi

# Processes at a high rate: a shell starting 1500 short ones.  Each sampled
# process gets an unwinder (caches by pc, ~360 KiB); they are recycled past
# 64, so memory stays flat (before: one per process, 1.6 GB for 3000).
t0=$(now_ms)
$tm "$PMUPROF" record -F 2000 -e cpu-clock -o "$out" -- \
	sh -c 'i=0; while [ $i -lt 1500 ]; do /bin/true; i=$((i + 1)); done' >"$T/o" 2>"$T/e"
rc=$?
if [ $rc -eq 0 ]; then pass procs-status; else fail procs-status "exit $rc: $(head -2 "$T/e" | tr '\n' '|')"; fi
if "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
	got=$(folded_total "$T/f")
	if [ "$(sample_count "$T/e")" = "$got" ] && [ "$got" -ge 100 ]; then pass procs-complete; else fail procs-complete "summary '$(sample_count "$T/e")', profile $got"; fi
else
	fail procs-complete "unreadable: $(head -1 "$T/f.err")"
fi
if [ -z "$tm" ]; then
	skip procs-memory "no /usr/bin/time"
else
	rss=$(sed -n 's/^rss=\([0-9]*\)$/\1/p' "$T/time")
	if [ -n "$rss" ] && [ "$rss" -lt 200000 ]; then pass procs-memory; else fail procs-memory "max RSS ${rss:-?} KiB, $(($(now_ms) - t0)) ms"; fi
fi
