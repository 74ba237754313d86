#!/bin/sh
# A target whose goroutines swing from 10 to 100 000 and back during the
# recording (record --wall, issue 18; tests/go/wallwait -swing: 10
# goroutines wait in main.chanWaiter throughout, 100 000 more are made in
# main.swinger and let go, over and over).  What must hold whatever the
# churn: pmuprof ends well and writes the profile; no goroutine is ever
# reported under a wrong stack (the 10 steady ones, whose ids the fixture
# printed, always and only under main.chanWaiter; a swinger never there);
# the 10 steady ones' wall time is 10 times the span of the snapshots,
# but for the time before the fixture made them (and two snapshots);
# the reads dropped are counted in the profile's comments; and
# pmuprof's memory stays bounded: its peak RSS at most that of a run on the
# 10 alone plus 3 KiB per goroutine of the peak (pmuprof-record(1) says what
# a goroutine costs).  Launched, Go 1.26 (and 1.19, stripped, when there).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-wall.sh"
need_perf
need_cmd go "$GO"
need_cmd time /usr/bin/time
N=100000 HZ=20
case $PMUPROF in */san/*) san=1 ;; *) san= ;; esac
# under ASan a swing to 30 000 (the same code; 100 000 in the normal pass)
[ -n "$san" ] && N=30000

run() { # NAME FIXTURE
	n=$1
	/usr/bin/time -f %M -o "$T/$n-base.rss" "$PMUPROF" record -q -e cpu-clock --wall -o "$T/$n-base.pb.gz" -- "$2" -chan 10 1 >/dev/null 2>"$T/$n-base.err"
	/usr/bin/time -f %M -o "$T/$n.rss" "$PMUPROF" record -q -e cpu-clock --wall -o "$T/$n.pb.gz" -- "$2" -swing $N 3 >"$T/$n.out" 2>"$T/$n.err"
	rc=$?
	ups=$(grep -c '^up ' "$T/$n.out")
	downs=$(grep -c '^down ' "$T/$n.out")
	if [ $rc -ne 0 ] || [ ! -s "$T/$n.pb.gz" ] || [ "$downs" -lt 1 ]; then
		fail "$n" "exit $rc, $ups up, $downs down: $(grep -v 'falling back' "$T/$n.err" | head -2 | tr '\n' '|')"
		return
	fi
	pass "$n-ends"
	"$PMUPROF" report -i "$T/$n.pb.gz" --sample-index wall >"$T/$n.report" 2>&1
	wall_samples "$T/$n.pb.gz" >"$T/$n.ws"
	snaps=$(wall_snaps "$T/$n.report")
	drop=$(wall_dropped "$T/$n.report")
	span=$(sed -n 's/.*the snapshots cover \([0-9.]*\) s.*/\1/p' "$T/$n.report")
	# time no snapshot could read (runtime.allgs unreadable), counted in no sample
	unread=$(sed -n 's/.*--wall unknown: [0-9]* snapshots found no list[^,]*, \([0-9.]*\) s in no sample.*/\1/p' "$T/$n.report")
	ready=$(awk '/^ready/ { print $2 }' "$T/$n.out")
	echo "# $n: $ups up, $downs down, $snaps snapshots over $span s, $drop dropped: $(sed -n 's/.*Hz: [0-9]* snapshots, //p' "$T/$n.report" | cut -c1-300)"
	if [ -z "$snaps" ] || [ -z "$drop" ] || [ "$snaps" -lt 3 ]; then
		fail "$n-counts" "${snaps:-no} snapshots, dropped ${drop:-not counted}"
		return
	fi
	pass "$n-counts"
	# no wrong stack: the steady ones always and only under main.chanWaiter
	awk '$1 == "goid" && $2 == "chanWaiter" { print $3 }' "$T/$n.out" | sort -u >"$T/$n.ids"
	bad=$(awk -F '\t' 'NR == FNR { id[$1] = 1; next }
		{ cw = index(";" $5 ";", ";main.chanWaiter;") > 0; sw = index(";" $5 ";", ";main.swinger;") > 0
		  if ((($2 in id) && !cw) || (!($2 in id) && cw) || (sw && cw)) { n++; w = $2 " " $3 " " $4 " " $5 } }
		END { if (n) printf "%d samples, e.g. goroutine %s\n", n, substr(w, 1, 200) }' "$T/$n.ids" "$T/$n.ws")
	if [ -z "$bad" ] && [ "$(wc -l <"$T/$n.ids")" -eq 10 ]; then pass "$n-stacks"; else fail "$n-stacks" "${bad:-$(wc -l <"$T/$n.ids") steady ids printed}"; fi
	# the steady ones: 10 goroutines over the whole span (but before they were made;
	# the span is printed to 10 ms), less the time the profile says no snapshot read
	res=$(awk -F '\t' -v span="$span" -v r="$ready" -v hz=$HZ -v u="${unread:-0}" '
		index(";" $5 ";", ";main.chanWaiter;") { W += $1 }
		END { a = span > 0 ? W / 1e9 / span : 0; lo = 10 * (1 - (r / 1000 + 2 / hz + u) / span)
		      if (u + 0 > 0.25 * span) lo = 10 # most of the time unread: not a pass
		      printf "%.2f goroutines (10, at least %.2f; %.3f s unread) %s\n", a, lo, u, (a >= lo && a <= 10 * span / (span - 0.005)) ? "ok" : "BAD" }' "$T/$n.ws")
	echo "# $n: main.chanWaiter $res"
	case $res in *ok) pass "$n-steady" ;; *) fail "$n-steady" "$res" ;; esac
	# memory
	base=$(tail -1 "$T/$n-base.rss") rss=$(tail -1 "$T/$n.rss")
	lim=$((base + N * 3))
	echo "# $n: pmuprof peak RSS $rss KiB (on the 10 alone $base KiB; limit $lim KiB)"
	if [ -n "$san" ]; then echo "# $n: memory not judged under ASan (its RSS is not pmuprof's)"
	elif [ "$rss" -le $lim ]; then pass "$n-memory"; else fail "$n-memory" "peak RSS $rss KiB > $lim KiB (base $base KiB + 3 KiB x $N)"; fi
}

if [ -x "$FIX/go126/wallwait" ]; then
	run go126 "$FIX/go126/wallwait"
else
	skip go126 "no $FIX/go126/wallwait (scripts/fixtures.sh)"
fi
exit 0
