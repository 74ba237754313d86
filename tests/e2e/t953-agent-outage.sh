#!/bin/sh
# san: no
# pmuprof agent loses nothing while its backend is down: the collector is
# killed (SIGKILL) for 30 s in the middle of a recording and started again
# on its port; every interval the agent made must reach it exactly once,
# the same as --dir (a second backend, never down) got, and their samples
# too: a uprobe -c 1 on main.tick of tests/go/ticker, whose whole
# intervals hold exactly the fixture's count for their second.  Retries
# wait at most 2 s here (PMUPROF_PUSH_BACKOFF_CAP_MS), 60 s by default.
# The agent says one line for the outage and one when it delivers again,
# not one an interval.  ~50 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-backends.sh"
need_perf
need_backend otelcol
tk=$FIX/go126/ticker
need_file ticker "$tk"
if [ ! -r /sys/bus/event_source/devices/uprobe/type ]; then
	skip all "no uprobe PMU in this kernel"
	exit 0
fi
otelcol_start || { fail otelcol-start "$why"; exit 0; }
"$tk" 38 >"$T/truth" &
tpid=$!
PMUPROF_PUSH_BACKOFF_CAP_MS=2000 "$PMUPROF" agent -v -p "$tpid" -e "uprobe:$tk:main.tick" -c 1 \
	--interval 1 --otlp "$otel_url" --dir "$T/d" --spool "$T/spool" 2>"$T/err" &
agent=$!
_bg="$agent $tpid"
sleep 3
otelcol_stop -9
echo "# collector killed at $(date +%T)"
sleep 30
otelcol_start "$otel_port" || { fail otelcol-restart "$why"; exit 0; }
echo "# collector back at $(date +%T)"
wait "$tpid"
sleep 2
kill -TERM "$agent"
wait "$agent"
check agent-exit test $? = 0
grep -v ': interval ' "$T/err" | sed 's/^/# agent: /' | head -12
made=$(grep -c ': interval ' "$T/err")
files=$(find "$T/d" -name '*.pb.gz' | wc -l)
check dir-has-all test "$files" = "$made"
# two sample types (samples, uprobe:main.tick): two profiles an interval
n=$(otlp_read profiles | wc -l)
echo "# $made intervals made, $files in --dir, $n OTLP profiles"
check otlp-each-interval-once test "$n" = $((2 * made))
sum_dir=$(for f in "$T"/d/*.pb.gz; do "$PMUPROF" report -i "$f" --folded; done | folded_total /dev/stdin)
sum_otlp=$(otlp_read leaf | awk '{ s += $1 } END { print s + 0 }')
echo "# samples: --dir $sum_dir, collector $sum_otlp (both sample types: x2), fixture $(sed -n 's/^ticks //p' "$T/truth")"
check otlp-same-samples test "$sum_otlp" = $((2 * sum_dir))
# the outage said, not an interval at a time
lines=$(grep -c 'otlp' "$T/err")
check outage-lines-few test "$lines" -le 4
check outage-retried grep -q 'otlp: .* intervals pushed, 0 refused, [1-9][0-9]* retries' "$T/err"
