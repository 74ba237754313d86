#!/bin/sh
# Stopping: --duration ends a long CMD (SIGTERM; SIGKILL 3 s later if it
# ignores that) and the profile is complete; SIGINT/SIGTERM to pmuprof are
# forwarded to CMD and the profile is still written and readable.
. "$(dirname "$0")/lib.sh"
need_perf

out=$T/out.pb.gz
rec() { "$PMUPROF" record -e cpu-clock -o "$out" "$@"; }
readable() { # NAME MIN: $out must be a readable profile with at least MIN samples
	if ! "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
		fail "$1" "unreadable: $(head -1 "$T/f.err")"
	elif [ "$(folded_total "$T/f")" -lt "$2" ]; then
		fail "$1" "$(folded_total "$T/f") samples, expected >= $2"
	else
		pass "$1"
	fi
}
busy='while :; do :; done'

# cpu_watch PID FILE: until the child of PID (pmuprof's CMD) is gone, write
# its CPU seconds (utime + stime of /proc/CHILD/stat; a zombie keeps them:
# an event without :u/:k counts the kernel's time too)
# to FILE every 0.1 s.  The last value is at most 0.1 s of its CPU short.
cpu_watch() {
	_tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
	_c='' _i=0
	while [ -z "$_c" ] && [ $_i -lt 200 ] && kill -0 "$1" 2>/dev/null; do
		_c=$(pgrep -P "$1" | head -1)
		[ -n "$_c" ] || sleep 0.02
		_i=$((_i + 1))
	done
	echo 0 >"$2"
	[ -n "$_c" ] || return 0
	while _v=$(awk -v t="$_tck" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' /proc/"$_c"/stat 2>/dev/null) && [ -n "$_v" ]; do
		echo "$_v" >"$2"
		sleep 0.1
	done
}
# min_samples FILE: the fewest samples a complete profile of CMD at 1000 Hz
# (the default) can hold, from the CPU time cpu_watch saw in FILE: cpu-clock
# samples every 1 ms of the task's CPU time; 10 % and 20 samples for the
# clock ticks' truncation and steal time.  A profile that lost the samples
# of a stopped or killed CMD falls short of it on any machine, loaded or not.
min_samples() { awk '{ c = $1 } END { m = 0.9 * 1000 * c - 20; printf "%d\n", (m > 1 ? m : 1) }' "$1"; }
# bg_rec ARGS...: pmuprof record ARGS in the background, watched by cpu_watch
# into $T/cpu; sets $pid.  Then: wait_bounded $pid N; wait $wpid
bg_rec() {
	"$PMUPROF" record -e cpu-clock -o "$out" "$@" 2>"$T/e" &
	pid=$!
	cpu_watch $pid "$T/cpu" &
	wpid=$!
}

# How long this machine takes, now, to record /bin/true: the bounds on
# --duration's end below allow 3 s and 3 times that on top (they bound a
# failure to stop, 30 s; the lower bounds are --duration itself)
t0=$(now_ms)
"$PMUPROF" record -q -e cpu-clock -o "$T/base.pb.gz" -- /bin/true
base=$(($(now_ms) - t0))
slack=$((3000 + 3 * base))
echo "# recording /bin/true took $base ms: stop bounds allow $slack ms over"

t0=$(now_ms)
rec --duration 1 -- sleep 30 2>"$T/e"
rc=$?
dt=$(($(now_ms) - t0))
if [ $dt -ge 900 ] && [ $dt -lt $((1000 + slack)) ]; then pass duration-sleep-time; else fail duration-sleep-time "took $dt ms"; fi
# pmuprof stopped it: exit 0, and the summary says how the command ended
if [ $rc -eq 0 ]; then pass duration-sleep-status; else fail duration-sleep-status "exit $rc, expected 0 (pmuprof stopped sleep at --duration)"; fi
"$PMUPROF" record -e cpu-clock --duration 0.3 -o "$T/ds.pb.gz" -- sleep 30 2>"$T/ds.err"
rc=$?
if [ $rc -eq 0 ] && grep -q 'stopped the command at --duration (it ended on SIGTERM)' "$T/ds.err" &&
	[ "$(wc -l <"$T/ds.err")" -eq 1 ]; then
	pass duration-summary-says
else
	fail duration-summary-says "exit $rc: $(tr '\n' '|' <"$T/ds.err")"
fi
# a command that ends by itself before --duration: its own status
"$PMUPROF" record -q -e cpu-clock --duration 30 -o "$T/ds.pb.gz" -- sh -c 'exit 7'
rc=$?
if [ $rc -eq 7 ]; then pass duration-own-exit; else fail duration-own-exit "exit $rc, expected 7"; fi
readable duration-sleep-profile 0

t0=$(now_ms)
bg_rec --duration 1 -- sh -c "$busy"
wait_bounded $pid 30
wait $wpid
dt=$(($(now_ms) - t0))
if [ $dt -ge 900 ] && [ $dt -lt $((1000 + slack)) ]; then pass duration-busy-time; else fail duration-busy-time "took $dt ms"; fi
echo "# duration 1 s, busy: $(cat "$T/cpu") s of CPU seen, >= $(min_samples "$T/cpu") samples expected"
readable duration-busy-profile "$(min_samples "$T/cpu")"
n=$(sample_count "$T/e")
if [ "$n" = "$(folded_total "$T/f")" ]; then pass duration-summary-count; else fail duration-summary-count "summary '$n', folded $(folded_total "$T/f")"; fi

t0=$(now_ms)
rec --duration 0.3 -- sh -c "$busy" 2>"$T/e"
dt=$(($(now_ms) - t0))
if [ $dt -ge 250 ] && [ $dt -lt $((300 + slack)) ]; then pass duration-decimal; else fail duration-decimal "took $dt ms"; fi

# CMD ignores SIGTERM: killed 3 s after --duration
t0=$(now_ms)
bg_rec --duration 0.3 -- sh -c "trap '' TERM; $busy"
wait_bounded $pid 30
rc=$?
wait $wpid
dt=$(($(now_ms) - t0))
# (pmuprof stopped it: exit 0; the command's SIGKILL is in the summary line)
if [ $rc -eq 0 ] && [ $dt -ge 2800 ] && [ $dt -lt $((3300 + slack)) ]; then
	pass duration-sigkill
else
	fail duration-sigkill "exit $rc after $dt ms, expected 0 after ~3.3 s"
fi
readable duration-sigkill-profile "$(min_samples "$T/cpu")"

# SIGINT / SIGTERM to pmuprof: forwarded (CMD's trap writes a file and exits 7).
for sig in INT TERM; do
	rm -f "$out" "$T/got"
	# pmuprof itself in the background (not a function: $! must be its pid)
	# (a loop in user mode only: the samples are of user time, and a test(1)
	# per turn made a third of it system time, split from user time by ticks)
	bg_rec -- sh -c "trap 'echo $sig >$T/got; exit 7' $sig; while :; do :; done"
	sleep 1
	kill -s $sig $pid
	wait_bounded $pid 10
	rc=$?
	wait $wpid
	if [ -e "$T/got" ]; then pass "sig$sig-forwarded"; else fail "sig$sig-forwarded" "CMD did not get SIG$sig"; fi
	if [ $rc -eq 7 ]; then pass "sig$sig-status"; else fail "sig$sig-status" "exit $rc, expected CMD's 7"; fi
	readable "sig$sig-profile" "$(min_samples "$T/cpu")"
	if grep -q "^pmuprof: wrote $out: " "$T/e"; then pass "sig$sig-summary"; else fail "sig$sig-summary" "$(head -2 "$T/e" | tr '\n' '|')"; fi
done

# SIGINT while CMD keeps running regardless: pmuprof still stops (3 s grace, then SIGKILL)
rm -f "$out"
t0=$(now_ms)
bg_rec -- sh -c "trap '' INT; $busy"
sleep 0.5
kill -INT $pid
wait_bounded $pid 30
rc=$?
wait $wpid
dt=$(($(now_ms) - t0))
if [ $rc -eq 137 ] && [ $dt -lt $((3500 + slack)) ]; then pass sigint-stubborn; else fail sigint-stubborn "exit $rc after $dt ms"; fi
readable sigint-stubborn-profile "$(min_samples "$T/cpu")"
