#!/bin/sh
# pmuprof agent cuts each process's profile on the clock, and every sample
# goes to one interval, the one its time falls in: a uprobe -c 1 on
# main.tick, which tests/go/ticker calls only from 100 to 900 ms into each
# second and counts by second.  The agent (-p, --interval 1) must give each
# whole interval exactly the fixture's count for that second, the
# intervals must follow one another with no gap or overlap, and none may
# hold more than the fixture made.  ~8 s.
. "$(dirname "$0")/lib.sh"
need_perf
fx=$FIX/go126/ticker
need_file ticker "$fx"
if [ ! -r /sys/bus/event_source/devices/uprobe/type ]; then
	skip all "no uprobe PMU in this kernel"
	exit 0
fi
"$fx" 7 >"$T/truth" &
tpid=$!
"$PMUPROF" agent -v -p "$tpid" -e "uprobe:$fx:main.tick" -c 1 --interval 1 --duration 5.5 \
	--spool "$T/spool" --dir "$T/d" 2>"$T/err"
rc=$?
wait "$tpid"
check agent-exit test "$rc" = 0
# each interval: "START DURATION SAMPLES" from its profile's header
for f in "$T"/d/*.pb.gz; do
	[ -e "$f" ] || continue
	"$PMUPROF" report -i "$f" >"$T/r" 2>/dev/null || { echo "unreadable $f"; continue; }
	t=$(sed -n 's/^# time: \(.*\)$/\1/p' "$T/r")
	printf '%s %s %s\n' "$(date -u -d "$t" +%s)" \
		"$(sed -n 's/^# duration: \([0-9.]*\) s$/\1/p' "$T/r")" \
		"$(sed -n 's/^# total samples: \([0-9]*\)$/\1/p' "$T/r")"
done | sort -n >"$T/ivl"
cat "$T/ivl" | sed 's/^/# interval /'
n=$(wc -l <"$T/ivl")
check intervals test "$n" -ge 5
# whole intervals: exactly the fixture's count for their second
awk 'NR == FNR { if ($1 == "second") truth[$2] = $3; next }
     $2 == "1.00" { whole++; if (truth[$1] + 0 != $3 + 0) { bad++; print "# second " $1 ": " $3 " samples, truth " truth[$1] + 0 } }
     END { printf "%d %d\n", whole, bad + 0 }' "$T/truth" "$T/ivl" >"$T/cmp"
cat "$T/cmp" | sed 's/^/# whole, wrong: /'
read -r whole bad <"$T/cmp"
if [ "$whole" -ge 3 ] && [ "$bad" = 0 ]; then
	pass whole-intervals-exact
else
	fail whole-intervals-exact "$bad of $whole whole intervals differ from the fixture's count"
fi
# one after the other: each starts where the one before ended (to the second;
# the first, cut at the attach, is not on a whole second)
gaps=$(awk 'NR > 2 && $1 != prev { g++ } { prev = $1 + int($2 + 0.5) } END { print g + 0 }' "$T/ivl")
check contiguous test "$gaps" = 0
total=$(awk '{ s += $3 } END { print s + 0 }' "$T/ivl")
ticks=$(sed -n 's/^ticks //p' "$T/truth")
check none-counted-twice test "$total" -le "${ticks:-0}"
