#!/bin/sh
# Attach mode, the rest of what a user sees: the progress line on a
# terminal (elapsed, samples, lost, live threads; cleared at the end) and
# none when stderr is not one; a child the target forks after the attach
# is followed, its samples under its own pid label.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd script script
need_file attach "$GOFIX/attach"

labels() {
	gotool tool pprof -tags "$1" 2>/dev/null |
		awk '/^ *[a-z_]+: Total/ { sec = $1; sub(/:$/, "", sec) }
			sec == "pid" && /\): [0-9]+$/ { print $NF }'
}

# ---- the progress line on a terminal (script(1) gives pmuprof a pty) ----
"$GOFIX/attach" -scale 3 >"$T/a.out" 2>&1 &
a=$!
i=0
while ! grep -q '^ready' "$T/a.out" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill -USR1 $a # its busy workers start
sleep 0.5
script -qec "$PMUPROF record -e cpu-clock -p $a --duration 1.5 -o $T/tty.pb.gz" /dev/null >"$T/tty.out" 2>&1
# each update: a carriage return, erase-line (ESC [K), the line
tr '\r' '\n' <"$T/tty.out" | sed "s/$(printf '\033')\[K//g" | grep '^\[ pmuprof: ' | tail -1 >"$T/last"
# "[ pmuprof: 1.2 s, 2345 samples, 0 lost, 5 threads ]": updated every
# 250 ms, the last one at 1.25..1.5 s, later on a machine that starves
# pmuprof's loop (so 1.0 s or more, not "1.x")
if grep -Eq '^\[ pmuprof: [1-9][0-9]*\.[0-9] s, [1-9][0-9]* samples, [0-9]+ lost, [0-9]+ threads? \]' "$T/last"; then
	pass progress-on-tty
else
	fail progress-on-tty "$(tr '\r' '\n' <"$T/tty.out" | head -3 | tr '\n' '|')"
fi
shown=$(sed -n 's/.* lost, \([0-9]*\) thread.*/\1/p' "$T/last")
nthr=$(ls /proc/$a/task | wc -l)
echo "# progress: last line '$(cat "$T/last")', /proc says $nthr threads"
# the Go runtime may start or stop a thread between the two looks: within 1
if [ -n "$shown" ] && [ "$shown" -ge $((nthr - 1)) ] && [ "$shown" -le $((nthr + 1)) ]; then pass progress-threads; else fail progress-threads "shown ${shown:-none}, /proc $nthr"; fi
# the line is cleared before the summary, which starts a line of its own
if tr '\r' '\n' <"$T/tty.out" | grep -q '^.*pmuprof: wrote '; then pass progress-cleared; else fail progress-cleared "$(tail -c 200 "$T/tty.out" | od -c | head -3 | tr '\n' ' ')"; fi
"$PMUPROF" record -e cpu-clock -p $a --duration 0.5 -o "$T/notty.pb.gz" 2>"$T/notty.err"
if ! grep -q '\[ pmuprof:' "$T/notty.err" && ! grep -q "$(printf '\r')" "$T/notty.err"; then
	pass no-progress-off-tty
else
	fail no-progress-off-tty "$(head -c 200 "$T/notty.err" | od -c | head -2 | tr '\n' ' ')"
fi
kill $a 2>/dev/null
wait $a 2>/dev/null

# ---- a child forked after the attach ----
# the parent idles (blocked opening a fifo), then, once pmuprof says it is
# attached (not after a fixed time, which a loaded machine may overrun),
# forks a busy child: its samples carry the child's pid
mkfifo "$T/go"
sh -c 'read x <"$2"; (i=0; while [ $i -lt 400000 ]; do i=$((i + 1)); done) & echo $! >"$1"; wait' sh "$T/child.pid" "$T/go" &
p=$!
"$PMUPROF" record -e cpu-clock -F 1000 -p $p -o "$T/fork.pb.gz" 2>"$T/fork.err" &
r=$!
i=0
while ! grep -q '^pmuprof: attached' "$T/fork.err" 2>/dev/null && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
echo go >"$T/go"
wait_bounded $r 60
rc=$?
wait $p 2>/dev/null
child=$(cat "$T/child.pid" 2>/dev/null)
labels "$T/fork.pb.gz" >"$T/pids"
echo "# fork: parent $p, child ${child:-?}; pid labels: $(tr '\n' ' ' <"$T/pids")"
if [ $rc -eq 0 ] && [ -n "$child" ] && grep -qx "$child" "$T/pids"; then
	pass fork-child-followed
else
	fail fork-child-followed "rc $rc, child ${child:-?}, labels $(tr '\n' ' ' <"$T/pids"): $(head -2 "$T/fork.err" | tr '\n' '|')"
fi
n=$(gotool tool pprof -tagfocus=pid="$child" -raw "$T/fork.pb.gz" 2>/dev/null | grep -c '^ *[0-9]*: ')
if [ "${n:-0}" -gt 0 ]; then pass fork-child-samples; else fail fork-child-samples "no sample tagged pid $child"; fi
