#!/bin/sh
# san: no
# pmuprof agent pushes to the real backends (a test OpenTelemetry Collector
# and Pyroscope, built from Go modules by scripts/backends.sh and cached):
# two processes at once, one started after the agent, one ending mid-
# interval.  tests/go/diffwork -ratio 3 (main.varied 3/4 of the work, in
# turns with main.steady) and tests/go/creators (main.work under the pprof
# label handler=checkout for 7 requests of 10, search for 3): what the
# collector wrote and what Pyroscope's query API gives back must hold each
# process apart by its resource, the shares of the fixtures' own truth,
# the goroutine id and labels of each sample as attributes, and every
# interval the agent made exactly once.  Beside it a second agent with
# --wall (a recording per process) on tests/go/wallwait -chan 4 -sleep 2
# -mutex 1: the goroutines' wall time by go.wait_reason 4:3:1 (main.main
# sleeps too).  The normal build alone: the ASan
# build pushes in t951 (--dir) and in the unit tests of the pushes
# (test-push: a local HTTP server).  ~20 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-backends.sh"
need_perf
need_backend otelcol
need_backend pyroscope
dw=$FIX/go126/diffwork
cr=$FIX/go126/creators
ww=$FIX/go126/wallwait
need_file diffwork "$dw"
need_file creators "$cr"
need_file wallwait "$ww"
otelcol_start || { fail otelcol-start "$why"; exit 0; }
pyro_start || { fail pyroscope-start "$why"; exit 0; }
"$PMUPROF" agent -v --otlp "$otel_url" --pyroscope "$pyro_url" --exe diffwork --exe creators \
	-F 199 --interval 2 --spool "$T/spool" 2>"$T/err" &
agent=$!
"$PMUPROF" agent -v --wall --otlp "$otel_url" --dir "$T/wd" --exe wallwait --interval 2 \
	--spool "$T/spool2" 2>"$T/err2" &
agent2=$!
_bg="$agent $agent2"
"$dw" -ratio 3 -scale 8 >"$T/dw.out" &
dwp=$!
"$ww" -chan 4 -sleep 2 -mutex 1 6 >"$T/ww.out" &
wwp=$!
sleep 2
"$cr" -duration 5s -truth >"$T/cr.out" &
crp=$!
wait "$dwp" "$crp" "$wwp"
sleep 2.5 # diffwork's last interval, after its exit
kill -TERM "$agent" "$agent2"
wait "$agent"
check agent-exit test $? = 0
wait "$agent2"
check wall-agent-exit test $? = 0
sed 's/^/# agent: /' "$T/err" | grep -v ': interval ' | head -12
made=$(grep -c ': interval ' "$T/err")
pushed=$(sed -n 's/^pmuprof: agent: otlp: \([0-9]*\) intervals pushed.*/\1/p' "$T/err")
check all-made-pushed test "$made" -gt 0 -a "${pushed:-0}" = "$made"

# the collector: a request an interval, one profile a sample type (samples, cpu)
otlp_read profiles >"$T/prof"
n=$(grep -vc 'service.name=wallwait' "$T/prof")
check otlp-each-interval-once test "$n" = $((2 * made))
# the --wall agent's: a profile per sample type (samples, cpu, wall) per interval
made2=$(grep -c ': interval ' "$T/err2")
n2=$(grep -c 'service.name=wallwait' "$T/prof")
types=$(grep 'service.name=wallwait' "$T/prof" | cut -f1 | sort -u | wc -l)
echo "# wall agent: $made2 intervals, $n2 OTLP profiles of $types sample types"
check otlp-wall-each-interval-once test "$made2" -gt 0 -a "$types" -ge 3 -a "$n2" = $((types * made2))
# each interval file's comments are its own: at most 2 s of 20 Hz snapshots (a
# few more at the last, flushed at the SIGTERM), not the recording's so far
most=0
for f in "$T"/wd/*.pb.gz; do
	k=$("$PMUPROF" report -i "$f" 2>/dev/null | sed -n 's/^# pmuprof record: --wall 20 Hz: \([0-9]*\) snapshots.*/\1/p')
	[ "${k:-0}" -gt "$most" ] && most=$k
done
echo "# wall agent: at most $most snapshots in an interval's comments"
check wall-comments-per-interval test "$most" -ge 20 -a "$most" -le 48
for svc in diffwork creators; do
	check "otlp-resource-$svc" grep -q "process.executable.name=$svc.*service.name=$svc" "$T/prof"
done
# shares (cpu nanoseconds), by leaf, against each fixture's truth
truth=$(sed -n 's/^diffwork steady=\([0-9]*\) varied=\([0-9]*\).*/\1 \2/p' "$T/dw.out")
otlp_read leaf service.name=diffwork >"$T/dwleaf"
got=$(awk '$2 == "main.varied" { v += $1 } $2 == "main.steady" { s += $1 } END { if (v + s) printf "%.1f", 100 * v / (v + s) }' "$T/dwleaf")
want=$(echo "$truth" | awk '{ printf "%.1f", 100 * $2 / ($1 + $2) }')
echo "# diffwork main.varied: $got % of varied+steady (truth $want %)"
check otlp-diffwork-share awk -v g="${got:-0}" -v w="$want" 'BEGIN { d = g - w; exit !(g > 0 && d < 8 && d > -8) }'
check otlp-kept-apart test "$(otlp_read leaf service.name=diffwork | grep -c 'main.work$')" = 0
otlp_read attr:handler service.name=creators >"$T/handler"
got=$(awk '$2 == "checkout" { c += $1 } $2 == "search" { s += $1 } END { if (c + s) printf "%.1f", 100 * c / (c + s) }' "$T/handler")
want=$(sed -n 's/^truth http=\([0-9]*\) grpc=\([0-9]*\).*/\1 \2/p' "$T/cr.out" | tail -1 | awk '{ printf "%.1f", 100 * $1 / ($1 + $2) }')
echo "# creators handler=checkout: $got % (truth $want %)"
check otlp-label-share awk -v g="${got:-0}" -v w="${want:-70}" 'BEGIN { d = g - w; exit !(g > 0 && d < 10 && d > -10) }'
# the goroutine of (nearly) every sample
otlp_read attr:goroutine.id service.name=creators >"$T/gid"
pct=$(awk '{ t += $1 } $2 != "-" { k += $1 } END { if (t) printf "%.0f", 100 * k / t }' "$T/gid")
echo "# creators: $pct % of the CPU time with a goroutine.id"
check otlp-goroutine-ids test "${pct:-0}" -ge 85

# wallwait's goroutines' wall time by wait reason: 4 chan receive, 3 sleep (2 and main), 1 mutex
otlp_read attr:go.wait_reason service.name=wallwait type=wall/nanoseconds >"$T/reason"
sed 's/^/# wall by reason: /' "$T/reason" | head -8
got=$(awk -F'\t' '$2 == "chan receive" { c += $1 } $2 == "sleep" { s += $1 } $2 == "sync.Mutex.Lock" { m += $1 }
	END { t = c + s + m; if (t) printf "%.1f %.1f %.1f", 100 * c / t, 100 * s / t, 100 * m / t }' "$T/reason")
echo "# chan receive, sleep, sync.Mutex.Lock: ${got:-none} % (truth 50.0 37.5 12.5)"
check otlp-wait-reasons awk -v g="${got:-0 0 0}" 'BEGIN { split(g, x, " "); split("50.0 37.5 12.5", w, " ")
	for (i = 1; i <= 3; i++) { d = x[i] - w[i]; if (d > 8 || d < -8) exit 1 } exit !(x[1] > 0) }'

# Pyroscope: the same shares through its query API
cpu=process_cpu:cpu:nanoseconds:cpu:nanoseconds
pyro_wait "$cpu" '{service_name="diffwork"}' 10
pyro_read leaf "$cpu" '{service_name="diffwork"}' >"$T/pdw"
got=$(awk '$2 == "main.varied" { v += $1 } $2 == "main.steady" { s += $1 } END { if (v + s) printf "%.1f", 100 * v / (v + s) }' "$T/pdw")
want=$(echo "$truth" | awk '{ printf "%.1f", 100 * $2 / ($1 + $2) }')
echo "# pyroscope diffwork main.varied: $got % (truth $want %)"
check pyroscope-diffwork-share awk -v g="${got:-0}" -v w="$want" 'BEGIN { d = g - w; exit !(g > 0 && d < 8 && d > -8) }'
pyro_read leaf "$cpu" '{service_name="creators"}' >"$T/pcr"
check pyroscope-kept-apart test "$(grep -c 'main.varied$' "$T/pcr")" = 0 -a -s "$T/pcr"
