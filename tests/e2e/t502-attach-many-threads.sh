#!/bin/sh
# Attach to a process with 500 idle OS threads: every thread is attached
# (pmuprof's count against /proc/PID/task), the attach time is printed, and
# after SIGUSR1 each of the 500 threads (which existed before the attach)
# shows up as a thread label with samples of main.idleSpin (each spins 3 ms
# of its own CPU time, measured by the fixture, whatever the CPU's speed).
. "$(dirname "$0")/lib.sh"
need_perf
need_file attach "$GOFIX/attach"

"$GOFIX/attach" -threads 500 -idle-iters 20000 -idle-cpu 3ms -scale 0.05 >"$T/fix.out" 2>&1 &
fpid=$!
if ! wait_line "$T/fix.out" '^ready ' 20; then
	fail fixture-ready "$(cat "$T/fix.out")"
	kill -KILL $fpid
	exit 0
fi
before=$(ls /proc/$fpid/task | wc -l)
"$PMUPROF" record -e cpu-clock -F 1000 -p $fpid -o "$T/many.pb.gz" 2>"$T/rec.err" &
rpid=$!
wait_line "$T/rec.err" '^pmuprof: attached to PID' 20
after=$(ls /proc/$fpid/task | wc -l)
got=$(sed -n 's/^pmuprof: attached to PID .*: \([0-9]*\) threads, \([0-9]*\) events, in \([0-9.]*\) ms$/\1 \2 \3/p' "$T/rec.err")
set -- $got
echo "# /proc/$fpid/task: $before threads before, $after after; pmuprof: ${1:-?} threads, ${2:-?} events, attach ${3:-?} ms"
if [ -n "$got" ] && [ "$1" -ge 500 ] && [ "$1" -ge "$before" ] && [ "$1" -ge "$after" ]; then
	pass all-threads-attached
else
	fail all-threads-attached "$(head -2 "$T/rec.err" | tr '\n' '|') /proc: $before/$after"
fi
ncpu=$(getconf _NPROCESSORS_ONLN)
if [ -n "$got" ] && [ "$2" -eq $(($1 * ncpu)) ]; then pass one-event-per-thread-and-cpu; else fail one-event-per-thread-and-cpu "$got, $ncpu CPUs"; fi
kill -USR1 $fpid
wait_bounded $fpid 120
frc=$?
wait_bounded $rpid 30
rrc=$?
if [ $rrc -eq 0 ] && [ $frc -eq 0 ] && grep -q '^round 1 ok' "$T/fix.out"; then
	pass record-and-target-ok
else
	fail record-and-target-ok "pmuprof $rrc, target $frc: $(tail -2 "$T/rec.err" "$T/fix.out" | tr '\n' '|')"
fi
gotool tool pprof -tags "$T/many.pb.gz" >"$T/tags" 2>"$T/tags.err"
n=$(awk '/^ *pid:/ { sec = "pid" } /^ *thread:/ { sec = "thread" } sec == "thread" && /\): [0-9]+$/ { c++ } END { print c + 0 }' "$T/tags")
echo "# threads with samples: $n; fixture: $(grep '^cpu ' "$T/fix.out")"
# each idle thread spins >= 3 ms of its CPU time (the fixture's idle-min):
# about 3 samples at 1 kHz; every thread seen, but for a few whose timer a
# loaded VM fired late (a property of the count of threads, not of the CPU)
imin=$(sed -n 's/^cpu round=1 .*idle-min=\([0-9.]*\).*/\1/p' "$T/fix.out")
if ! awk -v m="${imin:-0}" 'BEGIN { exit !(m >= 0.003) }'; then
	fail idle-threads-sampled "the fixture's idle threads spun ${imin:-?} s at least, not 3 ms"
elif [ "$n" -ge 490 ]; then pass idle-threads-sampled; else fail idle-threads-sampled "$n thread labels $(head -1 "$T/tags.err")"; fi
