#!/bin/sh
# pmuprof agent finds its targets and follows them: with --filters naming
# tests/go/ticker, a ticker started after the agent is recorded, a fleet
# process (Go too, but no target) is not, a ticker that exits mid-interval
# has its last interval; SIGHUP with the file naming fleet instead starts
# recording fleet (and no ticker started after it); SIGTERM ends the agent
# within its bound, fleet's last interval written after the SIGTERM.
# ~15 s.
. "$(dirname "$0")/lib.sh"
need_perf
tk=$FIX/go126/ticker
fl=$FIX/go126/fleet
need_file ticker "$tk"
need_file fleet "$fl"
printf '# the targets\nexe ticker\n' >"$T/filters"
"$PMUPROF" agent -v --filters "$T/filters" -F 199 --interval 1 --spool "$T/spool" \
	--dir "$T/d" 2>"$T/err" &
agent=$!
sleep 0.5
"$fl" >/dev/null &
fleet=$!
"$tk" 3 >"$T/t1" &
t1=$!
wait_line "$T/err" "recording process $t1 " 10
check ticker-found test $? = 0
wait "$t1"
sleep 2.5 # its last interval, after its exit
# fleet: no target before the SIGHUP
if grep -q "recording process $fleet " "$T/err"; then
	fail fleet-left-alone "recorded before it was named"
else
	pass fleet-left-alone
fi
printf 'exe fleet\n' >"$T/filters"
kill -HUP "$agent"
wait_line "$T/err" "recording process $fleet " 10
check hup-adds-fleet test $? = 0
"$tk" 3 >"$T/t2" &
t2=$!
sleep 3
wait "$t2"
if grep -q "recording process $t2 " "$T/err"; then
	fail hup-drops-ticker "a ticker started after the SIGHUP was recorded"
else
	pass hup-drops-ticker
fi
# stopped half a second into an interval: the last one has fleet's samples
sleep "0.$(( (1500 - $(date +%N | cut -c1-3 | sed 's/^0*//;s/^$/0/')) % 1000 ))"
t0=$(now_ms)
kill -TERM "$agent"
wait "$agent"
rc=$?
t1ms=$(now_ms)
kill "$fleet" 2>/dev/null
wait "$fleet" 2>/dev/null
check term-exit-0 test "$rc" = 0
check term-within-bound test $((t1ms - t0)) -lt 20000
sed 's/^/# agent: /' "$T/err" | head -20
# the first ticker's intervals: some samples, and one ending after it exited
n1=$(find "$T/d" -name "*-$t1-*.pb.gz" | wc -l)
check ticker-intervals test "$n1" -ge 2
# fleet's: some, and the last one holds samples (flushed at the SIGTERM)
last=$(find "$T/d" -name "*-$fleet-*.pb.gz" | sort | tail -1)
if [ -n "$last" ] && "$PMUPROF" report -i "$last" >"$T/r" 2>&1 &&
	[ "$(sed -n 's/^# total samples: //p' "$T/r")" -gt 0 ]; then
	pass fleet-last-interval
else
	fail fleet-last-interval "no samples in fleet's last interval (${last:-none})"
fi
check nothing-of-second-ticker test "$(find "$T/d" -name "*-$t2-*.pb.gz" | wc -l)" = 0
