#!/bin/sh
# pmuprof agent cuts each process's profile on the clock, and every sample
# goes to one interval, the one its time falls in: a uprobe -c 1 on
# main.tick, which tests/go/ticker calls only from 100 to 900 ms into each
# second and counts by second.  The agent (-p, --interval 1) must give each
# whole interval exactly the fixture's count for that second, the
# intervals must follow one another with no gap or overlap, and none may
# hold more than the fixture made.  Both ways of recording: host-wide (the
# default for CPU events, one set of events per CPU) and --per-process.
# ~8 s.
. "$(dirname "$0")/lib.sh"
need_perf
fx=$FIX/go126/ticker
need_file ticker "$fx"
if [ ! -r /sys/bus/event_source/devices/uprobe/type ]; then
	skip all "no uprobe PMU in this kernel"
	exit 0
fi
# both at once, each on a ticker of its own (host-wide, the uprobe fires in
# both: the other's ticks must not count)
for m in host per-process; do
	args=
	[ "$m" = per-process ] && args=--per-process
	mkdir -p "$T/$m"
	"$fx" 7 >"$T/$m/truth" &
	echo $! >"$T/$m/tpid"
	"$PMUPROF" agent -v $args -p "$(cat "$T/$m/tpid")" -e "uprobe:$fx:main.tick" -c 1 \
		--interval 1 --duration 5.5 --spool "$T/$m/spool" --dir "$T/$m/d" 2>"$T/$m/err" &
	echo $! >"$T/$m/apid"
done
for m in host per-process; do
	wait "$(cat "$T/$m/apid")"
	rc=$?
	wait "$(cat "$T/$m/tpid")"
	check $m-agent-exit test "$rc" = 0
	# each interval: "START DURATION SAMPLES" from its profile's header
	for f in "$T/$m"/d/*.pb.gz; do
		[ -e "$f" ] || continue
		"$PMUPROF" report -i "$f" >"$T/$m/r" 2>/dev/null || { echo "unreadable $f"; continue; }
		t=$(sed -n 's/^# time: \(.*\)$/\1/p' "$T/$m/r")
		printf '%s %s %s\n' "$(date -u -d "$t" +%s)" \
			"$(sed -n 's/^# duration: \([0-9.]*\) s$/\1/p' "$T/$m/r")" \
			"$(sed -n 's/^# total samples: \([0-9]*\)$/\1/p' "$T/$m/r")"
	done | sort -n >"$T/$m/ivl"
	cat "$T/$m/ivl" | sed "s/^/# $m interval /"
	n=$(wc -l <"$T/$m/ivl")
	check $m-intervals test "$n" -ge 5
	# whole intervals: exactly the fixture's count for their second
	awk 'NR == FNR { if ($1 == "second") truth[$2] = $3; next }
	     $2 == "1.00" { whole++; if (truth[$1] + 0 != $3 + 0) { bad++; print "# second " $1 ": " $3 " samples, truth " truth[$1] + 0 } }
	     END { printf "%d %d\n", whole, bad + 0 }' "$T/$m/truth" "$T/$m/ivl" >"$T/$m/cmp"
	cat "$T/$m/cmp" | sed "s/^/# $m whole, wrong: /"
	read -r whole bad <"$T/$m/cmp"
	if [ "$whole" -ge 3 ] && [ "$bad" = 0 ]; then
		pass $m-whole-intervals-exact
	else
		fail $m-whole-intervals-exact "$bad of $whole whole intervals differ from the fixture's count"
	fi
	# one after the other: each starts where the one before ended (to the second;
	# the first, cut at the attach, is not on a whole second)
	gaps=$(awk 'NR > 2 && $1 != prev { g++ } { prev = $1 + int($2 + 0.5) } END { print g + 0 }' "$T/$m/ivl")
	check $m-contiguous test "$gaps" = 0
	total=$(awk '{ s += $3 } END { print s + 0 }' "$T/$m/ivl")
	ticks=$(sed -n 's/^ticks //p' "$T/$m/truth")
	check $m-none-counted-twice test "$total" -le "${ticks:-0}"
done
