#!/bin/sh
# Replay throughput: a capture of shares at -F 20000 (about 100k samples),
# replayed by report; the rate (samples/s, one core, symbolization and
# rendering included) and the capture's bytes per sample go to '#' lines.
# No assertion on time; the replay must equal the live profile.
. "$(dirname "$0")/lib.sh"
need_perf
need_file speed "$GOFIX/shares"
"$PMUPROF" record -e cpu-clock -F 20000 --no-creators -o "$T/big.pb.gz" --raw "$T/big.data" \
	-- "$GOFIX/shares" 2>"$T/rec"
n=$(sample_count "$T/rec")
if [ ! -s "$T/big.data" ] || [ -z "$n" ]; then
	fail speed-record "$(head -2 "$T/rec" | tr '\n' '|')"
	exit 0
fi
pass speed-record
b=$(wc -c <"$T/big.data")
echo "# capture: $n samples, $b bytes, $((b / n)) bytes/sample"
best=0
for _ in 1 2 3; do
	PMUPROF_REPLAY_STATS=1 taskset -c 0 "$PMUPROF" report -i "$T/big.data" --folded >"$T/replay" 2>"$T/stats"
	r=$(sed -n 's/.* \([0-9]*\) samples\/s$/\1/p' "$T/stats")
	[ -n "$r" ] && [ "$r" -gt "$best" ] && best=$r
done
echo "# replay: best of 3, $best samples/s on one core ($(head -1 "$T/stats" | sed 's/^pmuprof: //'))"
"$PMUPROF" report -i "$T/big.pb.gz" --folded >"$T/live"
if cmp -s "$T/live" "$T/replay"; then pass speed-equiv; else fail speed-equiv "replay differs from live"; fi
