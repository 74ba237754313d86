#!/bin/sh
# Faults: threads created and destroyed at a high rate (thousands per second)
# for 5 s; one in 8 spins 1.5 ms of its own CPU time so that churned threads
# are sampled too.  pmuprof must keep up (finish soon after the target,
# slow the churn no more than `perf record` does), write a readable,
# complete profile with the churned threads' samples in main.threadBody (as
# many a spinning thread as perf record finds in the same binary), and stay
# small.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

# ring_kib PID: the size (KiB) of the perf rings PID has mapped: memory that
# grows with the number of CPUs (a ring each), counted in RSS by the
# kernels that fault ring pages in (before 6.15), not a leak
ring_kib() {
	_k=0
	for _r in $(sed -n 's/^\([0-9a-f]*\)-\([0-9a-f]*\) .*perf_event.*/\1:\2/p' /proc/"$1"/maps 2>/dev/null); do
		_k=$((_k + (0x${_r#*:} - 0x${_r%:*}) / 1024))
	done
	echo $_k
}
# wait_rings PID: ring_kib once pmuprof (PID, or its child under time) has its rings
wait_rings() {
	_i=0
	while [ $_i -lt 100 ]; do
		for _p in $1 $(pgrep -P "$1"); do
			_k=$(ring_kib $_p)
			[ "$_k" -gt 0 ] && echo "$_k" && return
		done
		sleep 0.02
		_i=$((_i + 1))
	done
	echo 0
}

# the reference: the same binary under perf record (1.5 s): its churn rate
# and its main.threadBody samples a spinning thread (the kernel's timer
# decides those: a third to a half on a 2-vCPU VM, not one each)
perfrate=
if command -v perf >/dev/null 2>&1 &&
	perf record -q -e cpu-clock -F 1000 -o "$T/perf.data" -- "$F" -mode threads -secs 1.5 >"$T/po" 2>"$T/pe"; then
	pn=$(sed -n 's/^threads //p' "$T/po")
	pb=$(perf report -i "$T/perf.data" --stdio --sort sym -F sample,sym 2>/dev/null | awk '!/^#/ && /main\.threadBody/ { b += $1 } END { print b + 0 }')
	perfrate=$(awk -v n="${pn:-0}" 'BEGIN { printf "%d", n / 1.5 }')
	perfper=$(awk -v b="$pb" -v n="${pn:-0}" 'BEGIN { if (n > 0) printf "%.4f", b / (n / 8); else print 0 }')
	echo "# perf record: ${pn:-?} threads in 1.5 s ($perfrate/s), $pb main.threadBody samples ($perfper a spinning thread)"
fi

out=$T/prof.pb.gz
tm=
[ -x /usr/bin/time ] && tm="/usr/bin/time -f rss=%M -o $T/time"
t0=$(now_ms)
$tm "$PMUPROF" record -e cpu-clock -o "$out" -- \
	"$F" -mode threads -secs 5 >"$T/o" 2>"$T/e" &
rp=$!
ring=$(wait_rings $rp)
# when the target is done (its last line), for the time pmuprof takes after it
tdone=
while kill -0 $rp 2>/dev/null && [ "$(proc_state $rp)" != Z ]; do
	[ -z "$tdone" ] && grep -q '^threads ' "$T/o" && tdone=$(now_ms)
	sleep 0.02
done
wait $rp
rc=$?
t1=$(now_ms)
[ -z "$tdone" ] && tdone=$t1
dt=$((t1 - t0))
after=$((t1 - tdone))
echo "# pmuprof: $dt ms in all, $after ms after the target's last line; rings ${ring:-?} KiB"
if [ $rc -eq 0 ]; then pass status; else fail status "exit $rc: $(head -2 "$T/e" | tr '\n' '|')"; fi
# a bound on a hang, not a speed: what is left after the target exits (drain
# the rings, write a few thousand samples: ~0.1 s) within 5 s, and the
# whole run within 15 s of the target's 5
if [ $after -lt 5000 ] && [ $dt -lt 20000 ]; then pass on-time; else fail on-time "took $dt ms for a 5 s run, $after ms of it after the target's end"; fi
n=$(sed -n 's/^threads //p' "$T/o")
rate=$(awk -v n="${n:-0}" 'BEGIN { printf "%d", n / 5 }')
echo "# pmuprof: ${n:-?} threads in 5 s ($rate/s)"
# the churn under pmuprof against perf record's in the same run (the
# kernel's work per thread grows with the CPUs for both: inherited events)
if [ -z "$perfrate" ]; then
	if [ -n "$n" ] && [ "$n" -gt 0 ]; then pass churn; else fail churn "no threads made"; fi
elif [ -n "$n" ] && [ "$rate" -ge $((perfrate / 3)) ]; then
	pass churn
else
	fail churn "'${n:-?}' threads in 5 s ($rate/s), under perf record $perfrate/s"
fi
if ! "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
	fail readable "$(head -1 "$T/f.err")"
	exit 0
fi
pass readable
got=$(folded_total "$T/f")
if [ "$(sample_count "$T/e")" = "$got" ] && [ "$got" -gt 0 ]; then pass complete; else fail complete "summary '$(sample_count "$T/e")', profile $got"; fi
b=$(awk '/(^|;)main\.threadBody/ { s += $NF } END { print s + 0 }' "$T/f")
per=$(awk -v b="$b" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.4f", b / (n / 8); else print 0 }')
echo "# main.threadBody: $b samples of $got ($per a spinning thread)"
# as many samples a spinning thread as perf record got (0.5x..2x: two
# runs seconds apart on a loaded machine), and at most ~2 each (a thread
# spins 1.5 ms: samples of churned threads counted twice exceed it)
if [ -z "$perfrate" ]; then
	skip thread-samples "no perf record to compare with"
elif awk -v p="$per" -v q="$perfper" 'BEGIN { exit !(q > 0 && p >= q / 2 && p <= 2 * q + 0.05 && p <= 2.5) }'; then
	pass thread-samples
else
	fail thread-samples "main.threadBody $b samples, $per a spinning thread; perf record $perfper"
fi
if [ -z "$tm" ]; then
	skip memory "no /usr/bin/time"
else
	rss=$(sed -n 's/^rss=\([0-9]*\)$/\1/p' "$T/time")
	# 200 MB besides the rings (a ring per CPU: more CPUs, more rings)
	if [ -n "$rss" ] && [ "$rss" -lt $((200000 + ${ring:-0})) ]; then pass memory; else fail memory "max RSS ${rss:-?} KiB, rings ${ring:-?} KiB"; fi
fi

# Processes at a high rate: a shell starting 1500 short ones.  Each sampled
# process gets an unwinder (caches by pc, ~360 KiB); they are recycled past
# 64, so memory stays flat (before: one per process, 1.6 GB for 3000).
t0=$(now_ms)
$tm "$PMUPROF" record -F 2000 -e cpu-clock -o "$out" -- \
	sh -c 'i=0; while [ $i -lt 1500 ]; do /bin/true; i=$((i + 1)); done; times' >"$T/o" 2>"$T/e" &
rp=$!
ring=$(wait_rings $rp)
wait $rp
rc=$?
# the shell's own CPU time (ms, first line of `times`): it lives the whole
# run, so its time is sampled in full, 2 a ms at 2 kHz (the short-lived
# processes' time mostly falls short of a period)
shms=$(awk 'NR == 1 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub(/s$/, "", a[2]); t += 60 * a[1] + a[2] } printf "%d", 1000 * t }' "$T/o")
if [ $rc -eq 0 ]; then pass procs-status; else fail procs-status "exit $rc: $(head -2 "$T/e" | tr '\n' '|')"; fi
if "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
	got=$(folded_total "$T/f")
	echo "# procs: $got samples; the shell used ${shms:-?} ms of CPU"
	# at least half the shell's samples (times counts 10 ms ticks: less 20 ms)
	if [ "$(sample_count "$T/e")" = "$got" ] && [ -n "$shms" ] && [ "$got" -ge $((shms - 20)) ] && [ "$got" -gt 0 ]; then pass procs-complete; else fail procs-complete "summary '$(sample_count "$T/e")', profile $got, the shell ${shms:-?} ms of CPU"; fi
else
	fail procs-complete "unreadable: $(head -1 "$T/f.err")"
fi
if [ -z "$tm" ]; then
	skip procs-memory "no /usr/bin/time"
else
	rss=$(sed -n 's/^rss=\([0-9]*\)$/\1/p' "$T/time")
	if [ -n "$rss" ] && [ "$rss" -lt $((200000 + ${ring:-0})) ]; then pass procs-memory; else fail procs-memory "max RSS ${rss:-?} KiB, rings ${ring:-?} KiB, $(($(now_ms) - t0)) ms"; fi
fi
