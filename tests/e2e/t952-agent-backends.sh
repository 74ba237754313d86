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
# interval the agent made exactly once.  The normal build alone: the ASan
# build pushes in t951 (--dir) and in the unit tests of the pushes
# (test-push: a local HTTP server).  ~20 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-backends.sh"
need_perf
need_backend otelcol
need_backend pyroscope
dw=$FIX/go126/diffwork
cr=$FIX/go126/creators
need_file diffwork "$dw"
need_file creators "$cr"
otelcol_start || { fail otelcol-start "$why"; exit 0; }
pyro_start || { fail pyroscope-start "$why"; exit 0; }
"$PMUPROF" agent -v --otlp "$otel_url" --pyroscope "$pyro_url" --exe diffwork --exe creators \
	-F 199 --interval 2 --spool "$T/spool" 2>"$T/err" &
agent=$!
_bg="$agent"
"$dw" -ratio 3 -scale 8 >"$T/dw.out" &
dwp=$!
sleep 2
"$cr" -duration 5s -truth >"$T/cr.out" &
crp=$!
wait "$dwp" "$crp"
sleep 2.5 # diffwork's last interval, after its exit
kill -TERM "$agent"
wait "$agent"
check agent-exit test $? = 0
sed 's/^/# agent: /' "$T/err" | grep -v ': interval ' | head -12
made=$(grep -c ': interval ' "$T/err")
pushed=$(sed -n 's/^pmuprof: agent: otlp: \([0-9]*\) intervals pushed.*/\1/p' "$T/err")
check all-made-pushed test "$made" -gt 0 -a "${pushed:-0}" = "$made"

# the collector: a request an interval, one profile a sample type (samples, cpu)
otlp_read profiles >"$T/prof"
n=$(wc -l <"$T/prof")
check otlp-each-interval-once test "$n" = $((2 * made))
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
