#!/bin/sh
# Faults: SIGKILL.
#  - pmuprof itself killed mid-record: no partial file at the output path
#    (-o) nor at the capture's (--raw, written all along the recording), the
#    previous files there intact byte for byte, no temp and no probe file
#    left (both are unnamed O_TMPFILE files until complete).
#  - the target killed with SIGKILL mid-record: pmuprof writes the profile
#    of what it saw and exits 137, as the shell would.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

out=$T/out/prof.pb.gz
raw=$T/out/cap.data
mkdir -p "$T/out"
# cpu_ms PID: the CPU time (utime + stime, ms) process PID has used so far
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' /proc/"$1"/stat 2>/dev/null; }
# the previous profile and capture: real ones
"$PMUPROF" record -e cpu-clock -q -o "$out" --raw "$raw" -- "$F" -mode busy -n 1 -secs 0.3 ||
	fail previous-record
cp "$out" "$T/prev"
cp "$raw" "$T/prev.data"

"$PMUPROF" record -e cpu-clock -o "$out" --raw "$raw" -- "$F" -mode busy -n 2 -secs 60 2>"$T/e" &
pid=$!
sleep 1.5
# the capture is being written now, to a file open in that directory (without a name there)
open_out=$(for fd in /proc/$pid/fd/*; do readlink "$fd"; done 2>/dev/null | grep -c "^$T/out/.")
if [ "$open_out" -ge 1 ]; then
	pass self-kill-capture-open
else
	fail self-kill-capture-open "no file of pmuprof open in $T/out: $(ls -l /proc/$pid/fd | tr '\n' '|')"
fi
child=$(pgrep -P $pid | head -1)
kill -KILL $pid
wait $pid 2>/dev/null
if cmp -s "$out" "$T/prev"; then pass self-kill-previous-intact; else fail self-kill-previous-intact "the file at the output path changed"; fi
if cmp -s "$raw" "$T/prev.data"; then pass self-kill-previous-capture-intact; else fail self-kill-previous-capture-intact "the file at the --raw path changed"; fi
left=$(ls -A "$T/out" | grep -v '^prof.pb.gz$' | grep -v '^cap.data$')
if [ -z "$left" ]; then pass self-kill-no-temp; else fail self-kill-no-temp "left: $left"; fi
if "$PMUPROF" report -i "$out" >/dev/null 2>&1; then pass self-kill-previous-readable; else fail self-kill-previous-readable; fi
if "$PMUPROF" report -i "$raw" >/dev/null 2>&1; then pass self-kill-previous-capture-readable; else fail self-kill-previous-capture-readable; fi
# the orphaned target keeps running (as under perf); do not leave it behind
[ -n "$child" ] && kill -KILL "$child" 2>/dev/null

# SIGKILL without a previous file: nothing at either path at all
rm -f "$out" "$raw"
"$PMUPROF" record -e cpu-clock -o "$out" --raw "$raw" -- "$F" -mode busy -n 2 -secs 60 2>"$T/e" &
pid=$!
sleep 1
child=$(pgrep -P $pid | head -1)
kill -KILL $pid
wait $pid 2>/dev/null
[ -n "$child" ] && kill -KILL "$child" 2>/dev/null
if [ -z "$(ls -A "$T/out")" ]; then pass self-kill-nothing-written; else fail self-kill-nothing-written "$(ls -A "$T/out" | tr '\n' ' ')"; fi

# the target SIGKILLed
"$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode busy -n 2 -secs 60 2>"$T/e" &
pid=$!
sleep 1.5
child=$(pgrep -P $pid | head -1)
if [ -z "$child" ]; then
	fail target-kill "no child of pmuprof found"
	kill -KILL $pid
	exit 0
fi
# the truth: the CPU time the target used up to the kill
cpu=$(cpu_ms "$child")
kill -KILL "$child"
wait_bounded $pid 10
rc=$?
if [ $rc -eq 137 ]; then pass target-kill-status; else fail target-kill-status "exit $rc, expected 137: $(head -2 "$T/e" | tr '\n' '|')"; fi
if "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
	pass target-kill-readable
	n=$(sample_count "$T/e")
	got=$(folded_total "$T/f")
	echo "# target killed: $got samples, it used ${cpu:-?} ms of CPU before the kill"
	# all it saw up to the kill: about a sample a ms of the target's CPU
	# time by then (1 kHz; at least 0.75x: a loaded VM's late timer)
	if [ "$n" = "$got" ] && [ "${cpu:-0}" -gt 0 ] && [ "$got" -ge $((cpu * 3 / 4)) ]; then pass target-kill-complete; else fail target-kill-complete "summary '$n', profile $got, ${cpu:-?} ms of CPU before the kill"; fi
else
	fail target-kill-readable "$(head -1 "$T/f.err")"
fi
