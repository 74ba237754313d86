#!/bin/sh
# Loss at the very end is counted: the kernel writes PERF_RECORD_LOST only at
# its next write that fits, so a ring still full when the recording stops
# never says what it dropped; only the event's own count (read_format
# PERF_FORMAT_LOST, Linux 6.0) does.  Made to happen every time: pmuprof
# attaches (-p) to tests/go/burst -linger (pinned to one CPU: one ring), is
# stopped (SIGSTOP) before the target's burst of 10 000 uprobe hits sampled
# -c 1 (~85 MiB of samples with the 8 KiB stack copy, the ring 32 MiB), so
# the ring fills and the rest is dropped with nobody reading; the target
# then stays alive and quiet (no hit, no thread, no mapping: nothing for the
# kernel to write, so no LOST record), pmuprof is continued and stopped by
# SIGINT.  Then samples + lost must be the fixture's calls: exactly, but for
# the side-band records the ring dropped too (one FORK record for each
# thread the target started after the attach: the allowance, printed; 0 in
# the runs seen), and `report -i` of the --raw capture must say the same
# lost.  A build without the count says 3960 samples, 0 lost.  ~2-3 s.
. "$(dirname "$0")/lib.sh"
need_perf
fx=$GOFIX/burst
need_file burst "$fx"
if [ ! -r /sys/bus/event_source/devices/uprobe/type ]; then
	skip all "no uprobe PMU in this kernel"
	exit 0
fi
ev="uprobe:$fx:main.(*counter).tick"
calls=10000

cpu=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //; s/[,-].*//')
taskset -c "${cpu:-0}" "$fx" -linger $calls >"$T/fo" 2>&1 &
f=$!
if ! wait_line "$T/fo" '^ready ' 10; then
	fail burst-end-lost "the fixture never said ready: $(head -c 200 "$T/fo")"
	kill -KILL $f 2>/dev/null
	exit 0
fi
"$PMUPROF" record -e "$ev" -c 1 -p $f -o "$T/q.pb.gz" --raw "$T/q.raw" 2>"$T/qe" &
r=$!
wait_line "$T/qe" '^pmuprof: attached' 10
kill -STOP $r
kill -USR1 $f
wait_line "$T/fo" '^ticks ' 60
kill -CONT $r
sleep 0.2
kill -INT $r
wait_bounded $r 30
rc=$?
kill -TERM $f
wait_bounded $f 10
frc=$?

ticks=$(sed -n 's/^ticks \([0-9][0-9]*\) .*/\1/p' "$T/fo")
tafter=$(sed -n 's/^ticks .* threads=\([0-9]*\)$/\1/p' "$T/fo")
tatt=$(sed -n 's/^pmuprof: attached .*: \([0-9]*\) threads\{0,1\},.*/\1/p' "$T/qe")
n=$(sample_count "$T/qe")
lost=$(sed -n 's/.* samples (\([0-9]*\) lost).*/\1/p' "$T/qe")
atend=$(sed -n 's/.*(\([0-9]*\) of them at the end.*/\1/p' "$T/qe")
rlost=$("$PMUPROF" report -i "$T/q.raw" 2>/dev/null | sed -n 's/^# lost \([0-9]*\) samples$/\1/p')
# the allowance: threads started while the ring was full, each a FORK record lost
slack=$((${tafter:-0} - ${tatt:-0}))
[ $slack -lt 0 ] && slack=0
echo "# $ticks calls: ${n:-?} samples + ${lost:-?} lost (${atend:-0} of them found at the end), allowance $slack (threads ${tatt:-?} at the attach, ${tafter:-?} after the burst); replay ${rlost:-?} lost"
if [ $rc -ne 0 ] || [ $frc -ne 0 ] || [ "$ticks" != $calls ]; then
	fail burst-end-lost "pmuprof exit $rc, fixture exit $frc: $(tr '\n' '|' <"$T/fo") $(head -3 "$T/qe" | tr '\n' '|')"
elif [ -n "$n" ] && [ -n "$lost" ] && [ "$((n + lost))" -ge "$ticks" ] &&
	[ "$((n + lost))" -le "$((ticks + slack))" ]; then
	pass burst-end-lost
else
	fail burst-end-lost "${n:-?} samples + ${lost:-?} lost of $ticks calls (allowance $slack): $(head -3 "$T/qe" | tr '\n' '|')"
fi
if [ -n "$lost" ] && [ "$rlost" = "$lost" ]; then pass burst-end-replay; else fail burst-end-replay "replay ${rlost:-?} lost, live ${lost:-?}"; fi
