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

# "samples/count cpu/nanoseconds" etc., from go tool pprof -raw
types() { gotool tool pprof -raw "$1" 2>/dev/null | awk '/^Samples:/ { getline; print; exit }' | sed 's/\[dflt\]//g; s/^ *//; s/ *$//'; }

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
"$PMUPROF" record -o "$out" -- $work 2>"$T/e"
rc=$?
nwarn=$(grep -c 'warning' "$T/e")
case $pmu in
no)
	if [ $rc -eq 0 ] && [ "$nwarn" -eq 1 ] && grep -Eq "$warn" "$T/e" && [ "$(wc -l <"$T/e")" -eq 2 ]; then
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
"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
if [ "$(folded_total "$T/f")" -ge 20 ] && grep -q 'main.burn4' "$T/f"; then
	pass default-event-profiles
else
	fail default-event-profiles "$(folded_total "$T/f") samples"
fi

# -e cpu-clock: no warning at all; only the summary line
"$PMUPROF" record -e cpu-clock -o "$out" -- /bin/true 2>"$T/e"
if [ "$(wc -l <"$T/e")" -eq 1 ] && ! grep -q warning "$T/e"; then pass cpu-clock-no-warning; else fail cpu-clock-no-warning "$(head -2 "$T/e" | tr '\n' '|')"; fi

# event -> expected sample types
ev() { # NAME WANT-TYPES WANT-MIN-SAMPLES record-args...
	n=$1 want=$2 min=$3
	shift 3
	rm -f "$out"
	if ! "$PMUPROF" record -q -o "$out" "$@" -- $work 2>"$T/e"; then
		fail "$n" "record failed: $(head -1 "$T/e")"
		return
	fi
	t=$(types "$out")
	"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
	c=$(folded_total "$T/f")
	if [ "$t" != "$want" ]; then
		fail "$n" "sample types '$t', expected '$want'"
	elif [ "$c" -lt "$min" ]; then
		fail "$n" "$c samples, expected >= $min"
	else
		pass "$n"
	fi
}
ev task-clock "samples/count cpu/nanoseconds" 20 -e task-clock
ev cpu-clock-u "samples/count cpu/nanoseconds" 20 -e cpu-clock:u
ev page-faults "samples/count page-faults/count" 1 -e page-faults -c 1
ev cpu-clock-period "samples/count cpu/nanoseconds" 20 -e cpu-clock -c 1000000
ev freq-100 "samples/count cpu/nanoseconds" 5 -e cpu-clock -F 100

# -c 1000000 on cpu-clock: each sample is 1 ms of CPU, so cpu/nanoseconds = samples * 1e6
"$PMUPROF" record -q -o "$out" -e cpu-clock -c 1000000 -- $work
gotool tool pprof -raw "$out" 2>/dev/null | awk '/^Samples:/ { s = 1; getline; next } /^Locations/ { s = 0 } s && /^ *[0-9]+ +[0-9]+:/ { c += $1; ns += $2 } END { print c, ns }' >"$T/cn"
read -r c ns <"$T/cn"
if [ "${c:-0}" -gt 0 ] && [ "$ns" = "$((c * 1000000))" ]; then pass period-values; else fail period-values "samples=$c cpu=$ns ns"; fi

# -F 2000 gives about twice the samples of -F 1000 for the same work
"$PMUPROF" record -q -o "$T/f1.pb.gz" -e cpu-clock -F 1000 -- $work
"$PMUPROF" record -q -o "$T/f2.pb.gz" -e cpu-clock -F 2000 -- $work
"$PMUPROF" report -i "$T/f1.pb.gz" --folded >"$T/f1"
"$PMUPROF" report -i "$T/f2.pb.gz" --folded >"$T/f2"
a=$(folded_total "$T/f1") b=$(folded_total "$T/f2")
if [ "$a" -gt 0 ] && awk -v a="$a" -v b="$b" 'BEGIN { r = b / a; exit !(r > 1.5 && r < 2.6) }'; then
	pass freq-scales
else
	fail freq-scales "-F 1000: $a samples, -F 2000: $b"
fi
