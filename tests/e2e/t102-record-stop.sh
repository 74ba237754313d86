#!/bin/sh
# Stopping: --duration ends a long CMD (SIGTERM; SIGKILL 3 s later if it
# ignores that) and the profile is complete; SIGINT/SIGTERM to pmuprof are
# forwarded to CMD and the profile is still written and readable.
. "$(dirname "$0")/lib.sh"
need_perf

out=$T/out.pb.gz
rec() { "$PMUPROF" record -e cpu-clock -o "$out" "$@"; }
readable() { # NAME: $out must be a readable profile with at least $2 samples
	if ! "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
		fail "$1" "unreadable: $(head -1 "$T/f.err")"
	elif [ "$(folded_total "$T/f")" -lt "$2" ]; then
		fail "$1" "$(folded_total "$T/f") samples, expected >= $2"
	else
		pass "$1"
	fi
}
busy='while :; do :; done'

t0=$(now_ms)
rec --duration 1 -- sleep 30 2>"$T/e"
rc=$?
dt=$(($(now_ms) - t0))
if [ $dt -ge 900 ] && [ $dt -lt 4000 ]; then pass duration-sleep-time; else fail duration-sleep-time "took $dt ms"; fi
if [ $rc -eq 143 ]; then pass duration-sleep-status; else fail duration-sleep-status "exit $rc, expected 143 (sleep got SIGTERM)"; fi
readable duration-sleep-profile 0

t0=$(now_ms)
rec --duration 1 -- sh -c "$busy" 2>"$T/e"
dt=$(($(now_ms) - t0))
if [ $dt -ge 900 ] && [ $dt -lt 4000 ]; then pass duration-busy-time; else fail duration-busy-time "took $dt ms"; fi
readable duration-busy-profile 500
n=$(sample_count "$T/e")
if [ "$n" = "$(folded_total "$T/f")" ]; then pass duration-summary-count; else fail duration-summary-count "summary '$n', folded $(folded_total "$T/f")"; fi

t0=$(now_ms)
rec --duration 0.3 -- sh -c "$busy" 2>"$T/e"
dt=$(($(now_ms) - t0))
if [ $dt -ge 250 ] && [ $dt -lt 2500 ]; then pass duration-decimal; else fail duration-decimal "took $dt ms"; fi

# CMD ignores SIGTERM: killed 3 s after --duration
t0=$(now_ms)
rec --duration 0.3 -- sh -c "trap '' TERM; $busy" 2>"$T/e"
rc=$?
dt=$(($(now_ms) - t0))
if [ $rc -eq 137 ] && [ $dt -ge 2800 ] && [ $dt -lt 7000 ]; then
	pass duration-sigkill
else
	fail duration-sigkill "exit $rc after $dt ms, expected 137 after ~3.3 s"
fi
readable duration-sigkill-profile 100

# SIGINT / SIGTERM to pmuprof: forwarded (CMD's trap writes a file and exits 7).
for sig in INT TERM; do
	rm -f "$out" "$T/got"
	# pmuprof itself in the background (not a function: $! must be its pid)
	"$PMUPROF" record -e cpu-clock -o "$out" -- \
		sh -c "trap 'echo $sig >$T/got; exit 7' $sig; while [ ! -e $T/got ]; do :; done" 2>"$T/e" &
	pid=$!
	sleep 1
	kill -s $sig $pid
	wait_bounded $pid 10
	rc=$?
	if [ -e "$T/got" ]; then pass "sig$sig-forwarded"; else fail "sig$sig-forwarded" "CMD did not get SIG$sig"; fi
	if [ $rc -eq 7 ]; then pass "sig$sig-status"; else fail "sig$sig-status" "exit $rc, expected CMD's 7"; fi
	readable "sig$sig-profile" 300
	if grep -q "^pmuprof: wrote $out: " "$T/e"; then pass "sig$sig-summary"; else fail "sig$sig-summary" "$(head -2 "$T/e" | tr '\n' '|')"; fi
done

# SIGINT while CMD keeps running regardless: pmuprof still stops (3 s grace, then SIGKILL)
rm -f "$out"
t0=$(now_ms)
"$PMUPROF" record -e cpu-clock -o "$out" -- sh -c "trap '' INT; $busy" 2>"$T/e" &
pid=$!
sleep 0.5
kill -INT $pid
wait_bounded $pid 10
rc=$?
dt=$(($(now_ms) - t0))
if [ $rc -eq 137 ] && [ $dt -lt 7000 ]; then pass sigint-stubborn; else fail sigint-stubborn "exit $rc after $dt ms"; fi
readable sigint-stubborn-profile 100
