#!/bin/sh
# Faults: SIGINT and SIGTERM to pmuprof while it records a busy two-thread Go
# program (and SIGINT twice in a row, as an impatient ^C^C): the signal is
# forwarded, the profile is complete (every sample the summary counts is in
# the file), readable, right about where the time went, and no temp file is
# left next to it.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

out=$T/out/prof.pb.gz
mkdir -p "$T/out"
# cpu_ms PID: the CPU time (utime + stime, ms) process PID has used so far
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' /proc/"$1"/stat 2>/dev/null; }
for sig in INT TERM INTx2; do
	rm -f "$out"
	"$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode busy -n 2 -secs 60 2>"$T/e" &
	pid=$!
	sleep 1.5
	# the truth: the CPU time the target used up to the signal
	cpu=$(cpu_ms "$(pgrep -P $pid | head -1)")
	case $sig in
	INTx2) kill -INT $pid; sleep 0.05; kill -INT $pid ;;
	*) kill -s $sig $pid ;;
	esac
	wait_bounded $pid 10
	rc=$?
	# Go dies of the forwarded signal: 128 + signo
	case $sig in TERM) want=143 ;; *) want=130 ;; esac
	if [ $rc -eq $want ]; then pass "$sig-status"; else fail "$sig-status" "exit $rc, expected $want: $(head -2 "$T/e" | tr '\n' '|')"; fi
	if ! "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
		fail "$sig-readable" "$(head -1 "$T/f.err")"
		continue
	fi
	pass "$sig-readable"
	n=$(sample_count "$T/e")
	got=$(folded_total "$T/f")
	echo "# $sig: $got samples, the target used ${cpu:-?} ms of CPU before the signal"
	# every sample counted is in the file, and they are the whole run up to
	# the signal: about one a ms of the target's CPU time by then (1 kHz; at
	# least 0.75x: a loaded VM's late timer)
	if [ -n "$n" ] && [ "$n" = "$got" ] && [ "${cpu:-0}" -gt 0 ] && [ "$got" -ge $((cpu * 3 / 4)) ]; then
		pass "$sig-complete"
	else
		fail "$sig-complete" "summary '$n', profile $got samples (want equal, >= 0.75 x ${cpu:-?} ms of CPU before the signal)"
	fi
	s=$(share "$T/f" main.spin)
	if awk -v s="$s" 'BEGIN { exit !(s >= 80) }'; then pass "$sig-spin-share"; else fail "$sig-spin-share" "main.spin $s %"; fi
	left=$(ls -A "$T/out" | grep -v '^prof.pb.gz$')
	if [ -z "$left" ]; then pass "$sig-no-temp"; else fail "$sig-no-temp" "left: $left"; fi
done
