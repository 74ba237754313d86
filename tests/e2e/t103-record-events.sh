#!/bin/sh
# The default event (cycles) and its fallback: without a hardware PMU exactly
# one warning line naming cpu-clock, and a cpu-clock profile; with a PMU no
# warning and a cycles profile.  Then other events: task-clock, page-faults,
# -c periods.  Sample types are read back with go tool pprof -raw.
. "$(dirname "$0")/lib.sh"
need_perf

out=$T/out.pb.gz
work="$GOFIX/shares -scale 0.03"
need_file events "$GOFIX/shares"

# "samples/count cpu/nanoseconds" etc., from go tool pprof -raw (kept in $1.raw)
types() { gotool tool pprof -raw "$1" >"$1.raw" 2>/dev/null; awk '/^Samples:/ { getline; print; exit }' "$1.raw" | sed 's/\[dflt\]//g; s/^ *//; s/ *$//'; }
# threads that got a sample in PROFILE (after types PROFILE)
threads() { grep -o 'thread:\[[0-9]*\]' "$1.raw" | sort -u | wc -l; }
# samples in PROFILE (folded FILE) plus those the ring buffer lost (the
# profile's "lost N samples" comment): the rate the kernel sampled at, which
# a loaded machine's late reader does not change
taken() { echo $(($(folded_total "$2") + $(sed -n 's/^Comment: lost \([0-9]*\) samples.*/\1/p' "$1.raw" | head -1))); }

# The truth for sample counts: the user and system CPU seconds the Go program
# used, in the same run, from bash's `time` (getrusage of the child, 1 ms
# resolution) written to $T/cpu as "USER SYS".  GOMAXPROCS=2: a bounded
# number of threads on any core count (see bounds).
# timed CMD...: record ... -- $timed CMD...
timed='f=$1; shift; TIMEFORMAT="%3U %3S"; { time "$@" 2>&3; } 3>&2 2>"$f"'
have_bash=0
command -v bash >/dev/null 2>&1 && have_bash=1
long() { echo "$GOFIX/shares -scale $1"; } # -scale 0.1: about 0.35 s of CPU on a 2020s core
# bounds F KIND THREADS MODES: "LO HI", the sample counts a profile of the
# program timed into $T/cpu can hold at F samples per second of CPU.  MODES
# all (no :u/:k: user and kernel time, as Go's profiler counts): F * (user +
# system); user (:u): F * user.  Less:
#  - each thread's unfinished period: < 1 sample per thread; THREADS that got
#    a sample, and 8 for the few that may never reach one (GOMAXPROCS=2: at
#    most 2 threads run Go code, plus sysmon and spare Ms);
#  - user only: the user/system split of getrusage, apportioned by clock
#    ticks (>= 100 Hz): 4 sigma of the binomial error of that split,
#    p = S/(U+S) over (U+S)*100 ticks;
#  - 10 % for timer expiries a loaded VM's steal time or IRQ latency
#    collapses into one (cpu-clock's hrtimer skips overruns);
# and at most 1.1 * F * (the same CPU time, plus the 4 sigma), plus bash's
# own start (under 20 ms of CPU; `time` counts its child only) above: the
# 10 % for steal time the hrtimer counts and getrusage does not.  KIND
# cycles (a PMU's default): the kernel's frequency mode re-derives the
# period each tick from the cycles counted, so the rate follows F only to
# within its adaptation (first periods, clock-speed changes): 0.6 and 1.5
# for the 10 %.  Off by 2x either way falls outside.
bounds() {
	awk -v f="$1" -v k="$2" -v th="$3" -v m="${4:-all}" '{ u = $1; s = $2 } END {
		r = u + s; p = r > 0 ? s / r : 0; sd = m == "user" ? sqrt(p * (1 - p) * r / 100) : 0
		c = m == "user" ? u : r
		lo = k == "cycles" ? 0.6 : 0.9; hi = k == "cycles" ? 1.5 : 1.1
		l = lo * f * (c - 4 * sd > 0 ? c - 4 * sd : 0) - th - 8
		printf "%d %d\n", (l > 0 ? l : 0), hi * f * (c + 4 * sd + 0.02) + th + 8 + 1 }' "$T/cpu"
}
# count_ok N F KIND PROFILE [MODES]: N within bounds (after types PROFILE); sets $why
count_ok() {
	read -r lo hi <<EOB
$(bounds "$2" "$3" "$(threads "$4")" "${5:-all}")
EOB
	why="$1 samples at $2 Hz for $(cat "$T/cpu") s of user/sys CPU (bash time, ${5:-all} counted), expected $lo..$hi"
	[ "$1" -ge "$lo" ] && [ "$1" -le "$hi" ]
}

pmu=unknown
if command -v perf >/dev/null 2>&1; then
	if perf stat -x, -e cycles true 2>&1 | grep -q '<not supported>\|<not counted>'; then
		pmu=no
	elif perf stat -x, -e cycles true >/dev/null 2>&1; then
		pmu=yes
	fi
fi
warn='^pmuprof: warning: cycles is not supported here \(no hardware PMU\); falling back to cpu-clock$'

rm -f "$out"
if [ $have_bash -eq 1 ]; then
	GOMAXPROCS=2 "$PMUPROF" record -o "$out" -- bash -c "$timed" bash "$T/cpu" $work 2>"$T/e"
else
	"$PMUPROF" record -o "$out" -- $work 2>"$T/e"
fi
rc=$?
# a loaded machine may starve the reader: its "lost N samples" warning is no
# part of the fallback's
grep -v '^pmuprof: warning: lost [0-9]* samples' "$T/e" >"$T/e2"
nwarn=$(grep -c 'warning' "$T/e2")
case $pmu in
no)
	if [ $rc -eq 0 ] && [ "$nwarn" -eq 1 ] && grep -Eq "$warn" "$T/e2" && [ "$(wc -l <"$T/e2")" -eq 2 ]; then
		pass fallback-warning
	else
		fail fallback-warning "rc=$rc, stderr: $(head -3 "$T/e" | tr '\n' '|')"
	fi
	t=$(types "$out")
	if [ "$t" = "samples/count cpu/nanoseconds" ]; then pass fallback-types; else fail fallback-types "sample types '$t'"; fi
	;;
yes)
	if [ $rc -eq 0 ] && [ "$nwarn" -eq 0 ]; then pass no-fallback; else fail no-fallback "rc=$rc, stderr: $(head -3 "$T/e" | tr '\n' '|')"; fi
	t=$(types "$out")
	if [ "$t" = "samples/count cycles/count" ]; then pass cycles-types; else fail cycles-types "sample types '$t'"; fi
	;;
*)
	skip fallback "perf(1) missing or inconclusive: cannot tell whether there is a PMU"
	;;
esac
# the default event at the default 1000 Hz (--help): cpu-clock without a
# PMU, cycles with one; the count against the program's own CPU time
"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
kind=cpu-clock
[ $pmu = yes ] && kind=cycles
t=$(types "$out")
if ! grep -q 'main.burn4' "$T/f"; then
	fail default-event-profiles "$(folded_total "$T/f") samples, none in main.burn4"
elif [ $have_bash -eq 0 ]; then
	skip default-event-profiles "bash missing: no CPU time to compare the count with"
elif count_ok "$(taken "$out" "$T/f")" 1000 $kind "$out"; then
	pass default-event-profiles
else
	fail default-event-profiles "$why"
fi
echo "# default event: $(taken "$out" "$T/f") samples (with lost) for $(cat "$T/cpu" 2>/dev/null) s user/sys"

# -e cpu-clock: no warning at all; only the summary line
"$PMUPROF" record -e cpu-clock -o "$out" -- /bin/true 2>"$T/e"
if [ "$(wc -l <"$T/e")" -eq 1 ] && ! grep -q warning "$T/e"; then pass cpu-clock-no-warning; else fail cpu-clock-no-warning "$(head -2 "$T/e" | tr '\n' '|')"; fi

# event -> expected sample types; with a rate (F > 0) the count against the
# CPU time of the same run (bounds), else at least MIN samples
ev() { # NAME WANT-TYPES F|MIN SCALE MODES record-args...
	n=$1 want=$2 f=$3 sc=$4 modes=$5
	shift 5
	rm -f "$out" "$T/cpu"
	if [ "$sc" = - ]; then
		GOMAXPROCS=2 "$PMUPROF" record -q -o "$out" "$@" -- $work 2>"$T/e"
	elif [ $have_bash -eq 1 ]; then
		GOMAXPROCS=2 "$PMUPROF" record -q -o "$out" "$@" -- bash -c "$timed" bash "$T/cpu" $(long "$sc") 2>"$T/e"
	else
		skip "$n" "bash missing: no CPU time to compare the count with"
		return
	fi
	if [ $? -ne 0 ]; then
		fail "$n" "record failed: $(head -1 "$T/e")"
		return
	fi
	t=$(types "$out")
	"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
	c=$(folded_total "$T/f")
	if [ "$t" != "$want" ]; then
		fail "$n" "sample types '$t', expected '$want'"
	elif [ "$sc" = - ] && [ "$c" -lt "$f" ]; then
		fail "$n" "$c samples, expected >= $f"
	elif [ "$sc" != - ] && ! count_ok "$(taken "$out" "$T/f")" "$f" cpu-clock "$out" "$modes"; then
		fail "$n" "$why"
	else
		pass "$n"
	fi
	[ "$sc" = - ] || echo "# $n: $(taken "$out" "$T/f") samples (with lost) at $f Hz for $(cat "$T/cpu") s user/sys"
}
# task-clock and cpu-clock sample every 1/F s of the task's CPU time (user
# and system; :u user only, its type user_cpu); -c 1000000 on them is 1 ms,
# i.e. F = 1000.  -F 100 over ~1 s of CPU (100 samples: half that fails,
# which 0.1 s could not tell from noise).
ev task-clock "samples/count cpu/nanoseconds" 1000 0.1 all -e task-clock
ev cpu-clock-u "samples/count user_cpu/nanoseconds" 1000 0.1 user -e cpu-clock:u
ev page-faults "samples/count page-faults/count" 1 - all -e page-faults -c 1
ev cpu-clock-period "samples/count cpu/nanoseconds" 1000 0.1 all -e cpu-clock -c 1000000
ev freq-100 "samples/count cpu/nanoseconds" 100 0.3 all -e cpu-clock -F 100

# -c 1000000 on cpu-clock: each sample is 1 ms of CPU, so cpu/nanoseconds = samples * 1e6
"$PMUPROF" record -q -o "$out" -e cpu-clock -c 1000000 -- $work
gotool tool pprof -raw "$out" 2>/dev/null | awk '/^Samples:/ { s = 1; getline; next } /^Locations/ { s = 0 } s && /^ *[0-9]+ +[0-9]+:/ { c += $1; ns += $2 } END { print c, ns }' >"$T/cn"
read -r c ns <"$T/cn"
if [ "${c:-0}" -gt 0 ] && [ "$ns" = "$((c * 1000000))" ]; then pass period-values; else fail period-values "samples=$c cpu=$ns ns"; fi

# -F 2000 gives twice the samples per CPU-second of -F 1000: each run's
# rate against its own CPU time (bash time, the same run), within the bounds
# above (~0.5 s of CPU each: 500 and 1000 samples); an -F that is ignored,
# halved or doubled puts one of them out
if [ $have_bash -eq 1 ]; then
	ok=1 msg=
	for f in 1000 2000; do
		GOMAXPROCS=2 "$PMUPROF" record -q -o "$T/f$f.pb.gz" -e cpu-clock -F $f -- bash -c "$timed" bash "$T/cpu" $(long 0.15)
		"$PMUPROF" report -i "$T/f$f.pb.gz" --folded >"$T/f$f"
		types "$T/f$f.pb.gz" >/dev/null
		c=$(taken "$T/f$f.pb.gz" "$T/f$f")
		count_ok "$c" $f cpu-clock "$T/f$f.pb.gz" || ok=0
		r=$(awk -v c="$c" '{ printf "%.0f\n", ($1 + $2 > 0 ? c / ($1 + $2) : 0) }' "$T/cpu")
		eval "r$f=$r" # a number (%.0f)
		msg="$msg -F $f: $why;"
	done
	# r1000 and r2000: set by the eval above
	# shellcheck disable=SC2154
	echo "# freq-scales: $r1000 and $r2000 samples per CPU-second, ratio $(awk -v a="$r1000" -v b="$r2000" 'BEGIN { printf "%.2f\n", (a > 0 ? b / a : 0) }')"
	if [ $ok -eq 1 ]; then pass freq-scales; else fail freq-scales "$msg"; fi
else
	skip freq-scales "bash missing: no CPU time to compare the rates with"
fi
