#!/bin/sh
# pmuprof agent --locks cut every second while lock waits last longer:
# tests/go/locks with the lock held 100 ms a round, so that ten
# goroutines queue for up to a second and most waits go on across a cut.
# Each wait must be counted once, in the interval it ends in: summed over
# the interval files, the contentions and the delay of each call site are
# the fixture's own count and measured wait (within 2 %), and each file's
# comment counts its interval alone.  (Before: a cut dropped the waits
# going on, 8 of 39 waits and 4.2 s of 31.5 s kept.)  ~9 s.
. "$(dirname "$0")/lib.sh"
need_perf
need_tracefs
lk=$FIX/go126/locks
need_file locks "$lk"
"$lk" -hold 100ms -gap 1ms -n 4 -delay 1s >"$T/out" 2>&1 &
lkp=$!
sleep 0.2
"$PMUPROF" agent --locks --locks-max-rate 0 --exe locks --interval 1 --duration 7 \
	--spool "$T/spool" --dir "$T/d" 2>"$T/err"
check agent-exit test $? = 0
wait "$lkp"
: >"$T/delay"
: >"$T/count"
files=0
for f in "$T"/d/*.pb.gz; do
	[ -e "$f" ] || continue
	files=$((files + 1))
	"$PMUPROF" report -i "$f" --folded --sample-index delay >>"$T/delay" 2>/dev/null
	"$PMUPROF" report -i "$f" --folded --sample-index contentions >>"$T/count" 2>/dev/null
done
sums() { awk '/main\.siteA/ { a += $NF } /main\.siteB/ { b += $NF } END { printf "%.0f %.0f\n", a, b }' "$1"; }
set -- $(sums "$T/count") $(sums "$T/delay") \
	$(awk '$1 == "truth" && $2 == "main.siteA" { a = $5; ac = $6 } $1 == "truth" && $2 == "main.siteB" { b = $5; bc = $6 } END { print ac, bc, a, b }' "$T/out")
echo "# $files interval files: contentions A $1 B $2 (truth $5 $6), delay A $3 B $4 ns (truth $7 $8)"
check contentions-each-once test "$files" -ge 4 -a "$1" = "$5" -a "$2" = "$6"
check delay-each-once awk -v a="$3" -v b="$4" -v ta="$7" -v tb="$8" 'BEGIN {
	exit !(ta > 0 && tb > 0 && a >= 0.98 * ta && a <= 1.02 * ta && b >= 0.98 * tb && b <= 1.02 * tb) }'
# each file's comment: the waits of its interval (at most the ten goroutines' waits of a second)
most=0
for f in "$T"/d/*.pb.gz; do
	k=$("$PMUPROF" report -i "$f" 2>/dev/null | sed -n 's/^# locks: \([0-9]*\) contended locks.*/\1/p')
	[ "${k:-0}" -gt "$most" ] && most=$k
done
check comments-per-interval test "$most" -ge 1 -a "$most" -le 12
exit 0
