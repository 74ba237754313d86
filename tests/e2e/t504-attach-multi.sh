#!/bin/sh
# -p A,B: one profile, both processes' samples, a numeric pid label on
# every sample (checked with go tool pprof -tags); pmuprof ends when both
# have exited.  -t TID: only that thread, threads it creates later are not
# followed.
. "$(dirname "$0")/lib.sh"
need_perf
need_file attach "$GOFIX/attach"

labels() {
	gotool tool pprof -tags "$1" 2>/dev/null |
		awk '/^ *[a-z_]+: Total/ { sec = $1; sub(/:$/, "", sec) }
			(sec == "pid" || sec == "thread") && /\): [0-9]+$/ { print sec, $NF }'
}

"$GOFIX/attach" -scale 0.2 >"$T/a.out" 2>&1 &
a=$!
"$GOFIX/attach" -scale 0.2 >"$T/b.out" 2>&1 &
b=$!
wait_line "$T/a.out" '^ready' 10
wait_line "$T/b.out" '^ready' 10
"$PMUPROF" record -e cpu-clock -p $a,$b -o "$T/two.pb.gz" 2>"$T/rec.err" &
r=$!
wait_line "$T/rec.err" '^pmuprof: attached to PIDs' 10 || fail attach-two "$(head -2 "$T/rec.err" | tr '\n' '|')"
kill -USR1 $a
sleep 0.3
kill -USR1 $b
wait_bounded $a 30
wait_bounded $b 30
wait_bounded $r 30
rc=$?
if [ $rc -eq 0 ]; then pass exit-0-after-both-exit; else fail exit-0-after-both-exit "exit $rc: $(tr '\n' '|' <"$T/rec.err")"; fi
labels "$T/two.pb.gz" >"$T/two.labels"
if grep -qx "pid $a" "$T/two.labels" && grep -qx "pid $b" "$T/two.labels" &&
	[ "$(grep -c '^pid ' "$T/two.labels")" -eq 2 ]; then
	pass both-pid-labels
else
	fail both-pid-labels "$(grep '^pid' "$T/two.labels" | tr '\n' ' ') want $a $b"
fi
# every sample carries both labels: the per-label totals equal the profile total
gotool tool pprof -tags "$T/two.pb.gz" 2>/dev/null | sed -n 's/^ *\(pid\|thread\): Total \(.*\)$/\1 \2/p' >"$T/totals"
if [ "$(awk '{ print $2 }' "$T/totals" | sort -u | wc -l)" -eq 1 ] && [ "$(wc -l <"$T/totals")" -eq 2 ]; then
	pass labels-on-every-sample
else
	fail labels-on-every-sample "$(tr '\n' ' ' <"$T/totals")"
fi
# report still merges across pids and threads: one row per function
"$PMUPROF" report -i "$T/two.pb.gz" --top 0 >"$T/two.table"
if [ "$(table_rows "$T/two.table" | awk '$4 == "main.late3"' | wc -l)" -eq 1 ]; then
	pass report-merges-labels
else
	fail report-merges-labels "$(table_rows "$T/two.table" | grep late3 | tr '\n' '|')"
fi

# -t: one idle thread only: its samples, none of the threads created later
# (it spins 150 ms of its own CPU time, whatever the CPU's speed)
"$GOFIX/attach" -scale 0.2 -threads 1 -idle-iters 20000 -idle-cpu 150ms >"$T/c.out" 2>&1 &
c=$!
wait_line "$T/c.out" '^ready' 10
it=$(sed -n 's/^ready .* idle=\([0-9]*\)$/\1/p' "$T/c.out")
"$PMUPROF" record -e cpu-clock -t $it -o "$T/one.pb.gz" 2>"$T/rec1.err" &
r=$!
wait_line "$T/rec1.err" '^pmuprof: attached to PID' 10
if grep -q ": 1 thread, " "$T/rec1.err"; then pass t-one-thread; else fail t-one-thread "$(head -1 "$T/rec1.err")"; fi
kill -USR1 $c
wait_bounded $c 30
wait_bounded $r 30
rc=$?
labels "$T/one.pb.gz" >"$T/one.labels"
"$PMUPROF" report -i "$T/one.pb.gz" --folded >"$T/one.folded"
spin=$(awk '/main\.idleSpin [0-9]+$/ { t += $NF } END { print t + 0 }' "$T/one.folded")
# the thread's samples against the CPU time it measured for its spin: one a
# ms, 0.75x..1.5x (a late timer on a loaded VM, stolen time; see t501)
icpu=$(sed -n 's/^cpu round=1 .*idle-total=\([0-9.]*\).*/\1/p' "$T/c.out")
echo "# -t: $spin idleSpin samples, the thread spun ${icpu:-?} s"
if [ $rc -eq 0 ] && [ -n "$it" ] && [ "$(tr '\n' ' ' <"$T/one.labels")" = "pid $c thread $it " ] &&
	awk -v n="$spin" -v c="${icpu:-0}" 'BEGIN { e = 1000 * c; exit !(c > 0 && n >= 0.75 * e && n <= 1.5 * e + 5) }'; then
	pass t-only-that-thread
else
	fail t-only-that-thread "exit $rc; tid $it, $spin idleSpin samples for ${icpu:-?} s of its CPU; labels: $(tr '\n' ' ' <"$T/one.labels")"
fi
if grep -q 'main\.late' "$T/one.folded"; then fail t-no-new-threads "$(grep -c late "$T/one.folded") late stacks"; else pass t-no-new-threads; fi
