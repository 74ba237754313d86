#!/bin/sh
# A running goroutine's function under --wall (issue 29): tests/go/wallwait
# with 14 goroutines parked on a channel and one spinning for the whole
# run in main.spinner, which calls main.spinStep over and over.  The
# fixture's truth: its goroutines (runtime.NumGoroutine(), the main one
# included) and the spinner's id.  A running goroutine's stack is not
# read; its sample is "[running]" over:
#  - its start function when the recording has no CPU samples (--wall
#    --alloc, no -e), main.spinner started by "go spinner()": main.spinner,
#    never main.spinStep, no age label;
#  - the stack of its latest CPU sample with -e cpu-clock, main.spinner
#    called from a closure (-spinwrap: the start function is the closure,
#    which had all the running time before): main.spinStep under
#    main.spinner, with the label cpu_sample_age_ms.
# Attached once every goroutine is in place, so each goroutine is in every
# snapshot: main.spinner's share of the user goroutines' wall time is the
# spinner's share of the goroutines (1/N) within 2 points, all of the
# spinner goroutine's wall time is under main.spinner, and with -e at
# most its first two snapshots' running time is over its start function
# (before its first CPU sample), the rest over a CPU sample's stack, 80 %
# of that under main.spinStep (the rest in main.spinner's own loop, or in
# a preemption signal's handler), the weighted median age at most 250 ms
# (a CPU sample every 10 ms at -F 99: 5 to 20 ms here).  Go 1.26 and Go
# 1.19 (stripped with -e).  About 12 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-wall.sh"
need_perf
need_cmd go "$GO"

# run NAME FIXTURE SPIN-OPTION RECORD-OPTIONS...: attached for 1.6 s once the fixture is ready
run() {
	n=$1 fx=$2 spin=$3
	shift 3
	: >"$T/$n.out"
	"$fx" -chan 14 $spin 1 2.6 >"$T/$n.out" 2>&1 &
	p=$!
	i=0
	while ! grep -q '^goroutines' "$T/$n.out" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	"$PMUPROF" record --all-frames -q --wall "$@" -p $p --duration 1.6 -o "$T/$n.pb.gz" 2>"$T/$n.err"
	wait $p
	wall_samples "$T/$n.pb.gz" >"$T/$n.ws"
}

# judge NAME CPU: CPU=1 when the recording samples CPU (then main.spinner runs
# under a closure, its start function)
judge() {
	n=$1 cpu=$2
	ng=$(awk '$1 == "goroutines" { print $2 }' "$T/$n.out")
	sid=$(awk '$1 == "goid" && $2 == "spinner" { print $3 }' "$T/$n.out")
	if [ -z "$ng" ] || [ -z "$sid" ] || [ ! -s "$T/$n.ws" ]; then
		fail "$n" "no truth or no wall profile: $(head -2 "$T/$n.err" | tr '\n' '|')"
		return
	fi
	# the user goroutines: those the fixture printed, and the main one (under runtime.main)
	awk '$1 == "goid" { print $3 }' "$T/$n.out" >"$T/$n.ids"
	"$PMUPROF" report -i "$T/$n.pb.gz" --sample-index wall >"$T/$n.report" 2>&1
	snaps=$(wall_snaps "$T/$n.report")
	r=$(awk -v sid="$sid" -v ng="$ng" -v cpu="$cpu" -v snaps="${snaps:-1}" -F '\t' '
		FILENAME ~ /\.ids$/ { U[$1] = 1; next }
		{ k = split($5, fr, ";"); leaf = fr[k]; sp = 0; main = 0
		  for (j = 1; j <= k; j++) { if (fr[j] == "main.spinner") sp = 1; if (fr[j] == "runtime.main") main = 1 }
		  if (U[$2] || main) W += $1
		  if (sp) S += $1
		  if (main) M += $1
		  if ($2 == sid) { G += $1
		    if ($3 == "running") { R += $1
		      if (leaf != "[running]") bad = bad " leaf " leaf
		      if ($6 == "-") { F += $1; if (k != 2 || fr[1] != (cpu ? "main.main.func1" : "main.spinner")) bad = bad " running without age: " $5 }
		      else { A[++na] = $6 " " $1; AW += $1; if ($5 ~ /(^|;)main\.spinStep;/) C += $1 } } }
		  else if (sp) bad = bad " goroutine " $2 " under main.spinner"
		  if ($6 != "-" && $3 != "running") bad = bad " age on " $3 }
		END {
			share = W ? 100 * S / W : 0; truth = 100 / ng
			# the weighted median age
			for (i = 1; i <= na; i++) for (j = i + 1; j <= na; j++) {
				split(A[i], x, " "); split(A[j], y, " ")
				if (y[1] + 0 < x[1] + 0) { t = A[i]; A[i] = A[j]; A[j] = t } }
			for (i = 1; i <= na; i++) { split(A[i], x, " "); acc += x[2]; if (acc >= AW / 2) { med = x[1]; break } }
			if (share < truth - 2 || share > truth + 2) bad = bad " share"
			if (!G || S < 0.999 * (G - (cpu ? F : 0))) bad = bad " spinner time elsewhere"
			# with CPU samples: the start function only before its first CPU
			# sample (two snapshots at most); the stacks of CPU samples mostly
			# in main.spinStep
			if (cpu && (!R || F > 2.5 * M / snaps || C < 0.8 * AW || med == "" || med > 250)) bad = bad " CPU stacks"
			if (!cpu && na) bad = bad " CPU stacks without CPU samples"
			printf "main.spinner %.2f%% of the user goroutines (truth 1/%d = %.2f%%), %.1f%% of its goroutine; running %.0f ms: %.0f ms over its start function, %.0f ms over a CPU sample (%.1f%% of it under main.spinStep, median age %s ms);%s\n",
				share, ng, truth, G ? 100 * S / G : 0, R / 1e6, F / 1e6, AW / 1e6, AW ? 100 * C / AW : 0, med == "" ? "-" : med, bad ? bad : " ok" }' "$T/$n.ids" "$T/$n.ws")
	echo "# $n: $r"
	case $r in *\;\ ok) pass "$n" ;; *) fail "$n" "$r" ;; esac
}

vs="go126 go"
if [ -n "$SAN" ]; then # the same code on both versions
	vs=go126
	echo "# ASan pass: Go 1.26 only (Go 1.19 in the normal pass)"
fi
for v in $vs; do
	if [ ! -x "$FIX/$v/wallwait" ]; then
		skip "$v" "no $FIX/$v/wallwait (scripts/fixtures.sh)"
		continue
	fi
	run "$v-start" "$FIX/$v/wallwait" -spin --alloc
	judge "$v-start" 0
	fx=$FIX/$v/wallwait
	[ $v = go ] && fx=$FIX/$v/wallwait-stripped
	run "$v-cpu" "$fx" -spinwrap -e cpu-clock -F 99
	judge "$v-cpu" 1
done
exit 0
