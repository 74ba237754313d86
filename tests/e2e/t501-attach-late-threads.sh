#!/bin/sh
# Attach to a running Go process (tests/go/attach) before it creates the
# threads that do its work: pmuprof -p must follow the new OS threads
# (inherited events), give main.late1..3 the shares of the CPU time the
# fixture measured for each (getrusage per thread, ~1:2:3; +-3 points),
# take about one sample per ms of the CPU the process used, label every
# sample with pid and thread, end by itself with exit 0 when the target
# exits, and match the shares of the same program launched under pmuprof
# (each within 3 points of that run's own accounting).
. "$(dirname "$0")/lib.sh"
need_perf
need_file attach "$GOFIX/attach"

"$GOFIX/attach" -scale 0.5 >"$T/fix.out" 2>&1 &
fpid=$!
wait_line "$T/fix.out" '^ready ' 10 || fail fixture-ready "$(cat "$T/fix.out")"
"$PMUPROF" record -e cpu-clock -F 1000 -p $fpid -o "$T/att.pb.gz" 2>"$T/rec.err" &
rpid=$!
if ! wait_line "$T/rec.err" '^pmuprof: attached to PID' 10; then
	fail attach "$(head -3 "$T/rec.err" | tr '\n' '|')"
	kill -KILL $fpid $rpid 2>/dev/null
	exit 0
fi
ls /proc/$fpid/task >"$T/tids-at-attach"
echo "# $(grep attached "$T/rec.err")"
kill -USR1 $fpid
wait_bounded $fpid 60
frc=$?
wait_bounded $rpid 30
rrc=$?
if [ $rrc -eq 0 ]; then pass exit-0-when-target-exits; else fail exit-0-when-target-exits "exit $rrc: $(cat "$T/rec.err" | tr '\n' '|')"; fi
if [ $frc -eq 0 ] && grep -q '^round 1 ok ' "$T/fix.out"; then
	pass target-result
else
	fail target-result "exit $frc: $(cat "$T/fix.out" | tr '\n' '|')"
fi
if [ "$(grep -c '^pmuprof: ' "$T/rec.err")" -eq 2 ] && grep -q '^pmuprof: wrote .*: [0-9]* samples (0 lost)' "$T/rec.err"; then
	pass stderr-lines
else
	fail stderr-lines "$(cat "$T/rec.err" | tr '\n' '|')"
fi
# no progress line when stderr is not a terminal
if grep -q "$(printf '\r')" "$T/rec.err"; then fail no-progress-off-tty; else pass no-progress-off-tty; fi

# truth KEY FILE: the fixture's own accounting (CPU seconds of lateN,
# process) from its "cpu round=1 ..." line
truth() { sed -n "/^cpu round=1 /s/.* $1=\([0-9.]*\).*/\1/p" "$2"; }
# want_share I FILE: main.lateI's share (%) of the process's CPU time
want_share() { awk -v a="$(truth late$1 "$2")" -v p="$(truth process "$2")" 'BEGIN { if (p > 0) printf "%.1f", 100 * a / p; else print "nan" }'; }

"$PMUPROF" report -i "$T/att.pb.gz" --folded >"$T/att.folded" 2>"$T/rep.err" || fail report "$(cat "$T/rep.err")"
total=$(folded_total "$T/att.folded")
for i in 1 2 3; do
	eval "s$i=\$(share \"\$T/att.folded\" main.late$i)"
done
cpu=$(truth process "$T/fix.out")
# s1, s2, s3: set by the eval above
# shellcheck disable=SC2154
echo "# attach: $total samples, late1=$s1% late2=$s2% late3=$s3%; fixture: $(grep '^cpu ' "$T/fix.out")"
# one sample per ms of the round's CPU time (the attach window holds the
# whole round and an idle process around it).  cpu-clock is a timer, not a
# random draw: what moves the count is systematic -- a loaded VM's timer
# firing late (fewer) and stolen time, which the timer counts and getrusage
# does not (more) -- so 0.75x..1.5x; following no new thread gives ~0,
# counting each sample twice 2x.
if awk -v n="$total" -v c="${cpu:-0}" 'BEGIN { e = 1000 * c; exit !(c > 0 && n >= 0.75 * e && n <= 1.5 * e + 10) }'; then
	pass samples
else
	fail samples "$total samples for ${cpu:-?} s of CPU at 1 kHz"
fi
# s: set by the eval
# shellcheck disable=SC2154
for i in 1 2 3; do
	eval "s=\$s$i"
	want=$(want_share $i "$T/fix.out")
	if awk -v s="$s" -v w="$want" 'BEGIN { d = s - w; exit !(w != "nan" && d <= 3 && d >= -3) }'; then
		pass late$i-share
	else
		fail late$i-share "main.late$i self $s %, the fixture measured $want % +- 3"
	fi
done

# the workers ran on threads created after the attach, and their samples carry their tid
workers=$(sed -n 's/^round 1 ok .*workers=\([0-9,]*\) .*/\1/p' "$T/fix.out")
gotool tool pprof -tags "$T/att.pb.gz" >"$T/tags" 2>"$T/tags.err"
awk '/^ *[a-z_]+: Total/ { sec = $1; sub(/:$/, "", sec) } (sec == "pid" || sec == "thread") && /\): [0-9]+$/ { print sec, $NF }' "$T/tags" >"$T/labels"
bad=""
for w in $(echo "$workers" | tr ',' ' '); do
	grep -qx "$w" "$T/tids-at-attach" && bad="$bad $w:existed-at-attach"
	grep -qx "thread $w" "$T/labels" || bad="$bad $w:no-samples"
done
if [ -n "$workers" ] && [ -z "$bad" ]; then pass new-threads-sampled; else fail new-threads-sampled "workers=$workers$bad"; fi
if [ "$(awk '$1 == "pid"' "$T/labels")" = "pid $fpid" ]; then
	pass pid-label
else
	fail pid-label "$(awk '$1 == "pid"' "$T/labels" | tr '\n' ' ') $(head -2 "$T/tags.err")"
fi

# the same program launched under pmuprof: the same shares, and labels there too
"$PMUPROF" record -q -e cpu-clock -F 1000 -o "$T/launch.pb.gz" -- "$GOFIX/attach" -scale 0.5 -start 100ms >"$T/fix2.out" 2>"$T/rec2.err"
"$PMUPROF" report -i "$T/launch.pb.gz" --folded >"$T/launch.folded"
d=""
for i in 1 2 3; do
	eval "a=\$s$i"
	b=$(share "$T/launch.folded" main.late$i)
	w=$(want_share $i "$T/fix2.out")
	d="$d late$i=$b% (measured $w%)"
	# launched as attached: within 3 pp of what that run's fixture measured
	awk -v b="$b" -v w="$w" 'BEGIN { d = b - w; exit !(w != "nan" && d <= 3 && d >= -3) }' || d="$d(!)"
done
echo "# launch:$d"
case $d in *'(!)'*) fail same-shares-as-launch "$d" ;; *) pass same-shares-as-launch ;; esac
if gotool tool pprof -tags "$T/launch.pb.gz" 2>/dev/null | grep -q '^ *thread:'; then
	pass launch-thread-label
else
	fail launch-thread-label
fi
