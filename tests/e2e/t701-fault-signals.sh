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
for sig in INT TERM INTx2; do
	rm -f "$out"
	"$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode busy -n 2 -secs 60 2>"$T/e" &
	pid=$!
	sleep 1.5
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
	if [ -n "$n" ] && [ "$n" = "$got" ] && [ "$got" -ge 1000 ]; then
		pass "$sig-complete"
	else
		fail "$sig-complete" "summary '$n', profile $got samples (want equal, >= 1000)"
	fi
	s=$(share "$T/f" main.spin)
	if awk -v s="$s" 'BEGIN { exit !(s >= 80) }'; then pass "$sig-spin-share"; else fail "$sig-spin-share" "main.spin $s %"; fi
	left=$(ls -A "$T/out" | grep -v '^prof.pb.gz$')
	if [ -z "$left" ]; then pass "$sig-no-temp"; else fail "$sig-no-temp" "left: $left"; fi
done
