#!/bin/sh
# Every frame right across the runtime's stack switches: samples on the
# system stack (systemstack, morestack) go on into the goroutine that
# switched, samples in signal handlers (a C handler, Go's own) go on into
# the interrupted code, and Go called back from C is one stack Go -> C ->
# Go.  Prints the [truncated] share of each run.
. "$(dirname "$0")/lib.sh"
REC_HZ=2000
need_perf
need_file switches "$GOFIX/clock" "$GOFIX/sysstack" "$GOFIX/cgocb" "$GOFIX/cgosig" "$GOFIX/signals" "$GOFIX/demo"

# count FILE ERE [ERE2]: samples whose folded stack matches ERE (and ERE2)
count() {
	awk -v a="$2" -v b="${3:-}" '{ l = $0; sub(/ [0-9]+$/, "", l) }
		l ~ a && (b == "" || l ~ b) { t += $NF } END { print t + 0 }' "$1"
}

# pct A B: A as a percentage of B, one decimal
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "0.0"; else printf "%.1f\n", 100 * a / b }'; }

# at_least NAME A B PCT: pass when A >= PCT % of B (and B > 0)
at_least() {
	if [ "$3" -gt 0 ] && awk -v a="$2" -v b="$3" -v p="$4" 'BEGIN { exit !(100 * a >= p * b) }'; then
		pass "$1"
	else
		fail "$1" "$2 of $3, want >= $4 %"
	fi
}

# truncated FILE: samples [truncated] where the goroutine's stack could be
# followed: not while it is being copied (copystack) or freed (goexit0), the
# exceptions t802 makes too, nor in the scheduler once the goroutine is
# switched out (schedule, after park_m or a preemption's gopreempt_m: no
# goroutine is current); how often a program is there depends on the
# machine (memory speed, load: preemptions), how often the rest is cut does not
truncated() {
	awk '{ l = $0; sub(/ [0-9]+$/, "", l) }
		l ~ /\[truncated\]/ && l !~ /(^|;)runtime\.(copystack|goexit0|schedule)(;|$)/ { t += $NF } END { print t + 0 }' "$1"
}

# ---- demo: the [truncated] share, was ~7.5 % (systemstack, mcall, morestack)
rec demo -- "$GOFIX/demo" -duration 2s
tot=$(folded_total "$T/demo.folded")
tra=$(count "$T/demo.folded" '\[truncated\]')
tr=$(truncated "$T/demo.folded")
echo "# demo: $tra of $tot samples [truncated] ($(pct "$tra" "$tot") %), $tr outside copystack/goexit0/schedule ($(pct "$tr" "$tot") %)"
if [ "$tot" -gt 0 ] && [ $((tr * 100)) -le $((tot * 2)) ]; then pass demo-truncated; else
	fail demo-truncated "$tr of $tot"; fi
sys=$(count "$T/demo.folded" ';runtime\.systemstack;')
sysok=$(count "$T/demo.folded" '^runtime\.goexit;.*;runtime\.systemstack;')
echo "# demo: $sysok of $sys samples with runtime.systemstack reach runtime.goexit"
at_least demo-systemstack "$sysok" "$sys" 80

# ---- the vDSO, named from its own symbols: time.Now in a loop; time.now
# calls it on g0, and the walk goes back to the goroutine through R12
rec clock -- "$GOFIX/clock" -duration 1s
ctot=$(folded_total "$T/clock.folded")
vd=$(count "$T/clock.folded" '(^|;)(runtime\.nanotime1|time\.now);.')
vdn=$(count "$T/clock.folded" '(^|;)(runtime\.nanotime1|time\.now);__vdso_clock_gettime')
echo "# clock: $vdn of $vd samples under time.now/runtime.nanotime1 in __vdso_clock_gettime"
at_least vdso-named "$vdn" "$vd" 95
vdg=$(count "$T/clock.folded" '^runtime\.goexit;runtime\.main;main\.main;main\.tick;time\.Now;time\.now;__vdso_clock_gettime')
echo "# clock: $vdg of $vdn samples in the vDSO on runtime.goexit;...;main.tick;time.Now;time.now"
at_least vdso-to-goroutine "$vdg" "$vdn" 90
# most of a time.Now loop is in the vDSO, whatever the machine's speed or
# load (a vDSO that falls back to the syscall stays under it too): at least
# half of the run's samples, and enough (30) for the shares above to mean something
echo "# clock: $vd of $ctot samples under time.now/runtime.nanotime1"
if [ "$vd" -lt 30 ] || [ $((vd * 2)) -lt "$ctot" ]; then fail vdso-samples "only $vd of $ctot samples in the vDSO"; else pass vdso-samples; fi

# ---- system stack on behalf of known goroutines
rec sys -- "$GOFIX/sysstack" -duration 2s
tot=$(folded_total "$T/sys.folded")
tra=$(count "$T/sys.folded" '\[truncated\]')
tr=$(truncated "$T/sys.folded")
echo "# sysstack: $tra of $tot samples [truncated] ($(pct "$tra" "$tot") %), $tr outside copystack/goexit0/schedule ($(pct "$tr" "$tot") %)"
# morestack under main.recurse: newstack/copystack of main.grow's goroutine
more=$(count "$T/sys.folded" ';runtime\.morestack;')
moreok=$(count "$T/sys.folded" '^runtime\.goexit;main\.main\.func2;main\.grow;(main\.recurse;)+runtime\.morestack;runtime\.newstack')
# (less those cut while the stack is copied or the goroutine switched out:
# their share is the machine's, memory speed and preemptions; goschedImpl
# has dropped the goroutine, and its wait for the scheduler's lock in the
# kernel, counted since the kernel's time is, is a few percent of them)
morecut=$(awk '{ l = $0; sub(/ [0-9]+$/, "", l) } l ~ /;runtime\.morestack;/ && l ~ /\[truncated\]/ &&
	l ~ /(^|;)runtime\.(copystack|schedule|goschedImpl)(;|$)/ { t += $NF } END { print t + 0 }' "$T/sys.folded")
echo "# sysstack: $moreok of $more samples with runtime.morestack on runtime.goexit;main.main.func2;main.grow;main.recurse... ($morecut cut in copystack/schedule)"
at_least morestack-goroutine "$moreok" $((more - morecut)) 95
# systemstack: every sample through it is under one of the fixture's or the runtime's goroutines
sys=$(count "$T/sys.folded" ';runtime\.systemstack;')
sysok=$(count "$T/sys.folded" '^runtime\.goexit;.*;runtime\.systemstack;')
echo "# sysstack: $sysok of $sys samples with runtime.systemstack reach runtime.goexit"
at_least systemstack-goroutine "$sysok" "$sys" 60
if [ "$more" -gt 0 ] && [ $((tr * 100)) -le $((tot * 2)) ]; then pass sysstack-truncated; else
	fail sysstack-truncated "$tr of $tot"; fi

# ---- a C signal handler: handler_burn goes on into main.spin
# (the fixture prints the CPU time its handler ran: the truth for the count)
# (rec's record, with the fixture's output kept)
"$PMUPROF" record --all-frames -q -e cpu-clock -F "$REC_HZ" -o "$T/csig.pb.gz" -- "$GOFIX/cgosig" -duration 2s >"$T/csig.out" 2>"$T/csig.err" &&
	"$PMUPROF" report -i "$T/csig.pb.gz" --folded >"$T/csig.folded" || { : >"$T/csig.folded"; sed 's/^/    /' "$T/csig.err" | head -3; }
tot=$(folded_total "$T/csig.folded")
h=$(count "$T/csig.folded" 'handler_burn$')
hok=$(count "$T/csig.folded" '^runtime\.goexit;main\.main\.func1;main\.spin;(.*;)?handler_burn$')
tr=$(count "$T/csig.folded" '\[truncated\]')
hroot=$(count "$T/csig.folded" '^runtime\.(goexit|mstart|rt0_go);(.*;)?handler_burn$')
echo "# cgosig: $hok of $h samples in handler_burn on runtime.goexit;main.main.func1;main.spin, $hroot rooted ($tr of $tot [truncated])"
# ITIMER_PROF goes to whichever thread of the process runs: under load more
# often a runtime thread (sysmon, an idle M) than main.spin's.  What does not
# depend on the machine: every interrupted stack goes on, through the
# kernel's signal frame, to its root; and main.spin's are among them.
at_least c-handler-interrupted "$hroot" "$h" 95
if [ "$hok" -gt 0 ]; then pass c-handler-into-spin; else fail c-handler-into-spin "none of $h through main.spin"; fi
hms=$(sed -n 's/^handler [0-9]* calls \([0-9.]*\) ms$/\1/p' "$T/csig.out")
hexp=$(awk -v m="${hms:-0}" -v f="$REC_HZ" 'BEGIN { printf "%.0f\n", m * f / 1000 }')
echo "# cgosig: $h samples in handler_burn; it ran ${hms:-?} ms of CPU by its own clock: $hexp samples at $REC_HZ Hz"
# half to twice the truth (a cpu-clock sample per 0.5 ms of the thread's CPU:
# a few percent off at most), when it ran long enough to say (10 samples)
if [ "$hexp" -lt 10 ]; then skip c-handler-sampled "the handler ran only ${hms:-?} ms"
elif [ $((h * 2)) -ge "$hexp" ] && [ "$h" -le $((hexp * 2 + 5)) ]; then pass c-handler-sampled
else fail c-handler-sampled "$h samples in the handler, $hexp by its own CPU time"; fi

# ---- Go's signal handler (runtime CPU profiler): sigtramp goes on into main.spin
# (the handler is ~0.1 % of the CPU: 5 kHz for 3 s gives tens of samples)
REC_HZ=5000
rec gsig -- "$GOFIX/signals" -duration 3s
REC_HZ=2000
g=$(count "$T/gsig.folded" ';runtime\.sigtramp;')
gok=$(count "$T/gsig.folded" '^runtime\.goexit;main\.main\.func1;main\.spin;(main\.deeper;)*runtime\.sigtramp;runtime\.sigtrampgo')
echo "# signals: $gok of $g samples under runtime.sigtramp on runtime.goexit;main.main.func1;main.spin"
# (a handful of samples a run: a share of fewer than 5 says nothing)
if [ "$g" -lt 5 ]; then skip go-handler-interrupted "only $g samples in Go's signal handler"; else
	at_least go-handler-interrupted "$gok" "$g" 60; fi

# ---- Go -> C -> Go: cgo callback in one stack
rec cgocb -- "$GOFIX/cgocb" -scale 0.3
tot=$(folded_total "$T/cgocb.folded")
b=$(count "$T/cgocb.folded" 'main\.burnLoop$')
full=$(count "$T/cgocb.folded" '^runtime\.goexit;main\.main\.func1;main\.worker;main\._Cfunc_cwork;runtime\.cgocall;runtime\.asmcgocall;_cgo_[0-9a-f]+_Cfunc_cwork;cwork;goBurn;crosscall2;runtime\.cgocallback;.*;main\.goBurn;main\.burnLoop$')
echo "# cgocb: $full of $b samples in main.burnLoop on goexit;...;main.worker;...;asmcgocall;cwork;goBurn;crosscall2;cgocallback;...;main.goBurn"
at_least cgo-callback-continuous "$full" "$b" 90
