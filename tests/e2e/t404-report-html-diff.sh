#!/bin/sh
# san: no (the browser part; lib/html's diff runs under ASan in test-html, the page in t403)
# report --html --diff-base: the differential flame graph of two runs of
# the diffwork fixture, main.varied's work doubled in the second (-ratio 1,
# then 2).  In Debian's chromium: main.varied red, main.steady blue, their
# change in points of the normalised share as pmuprof report's Cum% of the
# two files gives it, near the fixture's own truth (its printed iteration
# counts); the other way round, the colours swap.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd node node
need_cmd chromium chromium
need_file diffwork "$GOFIX/diffwork"
need_file puppeteer-core "$NPM/puppeteer-core/package.json"
browse() { node "$top/tests/e2e/browse.js" "$@"; }

for r in 1 2; do
	"$PMUPROF" record -q -e cpu-clock -F 2000 -o "$T/r$r.pb.gz" -- "$GOFIX/diffwork" -ratio $r -scale 0.5 \
		>"$T/r$r.out" 2>"$T/r$r.err" || { fail record-$r "$(head -1 "$T/r$r.err")"; exit 0; }
	"$PMUPROF" report -i "$T/r$r.pb.gz" --top 0 >"$T/r$r.txt"
done
cum() { awk -v f="$2" '$4 == f { sub(/%/, "", $2); print $2 }' "$1"; }
# the fixture's truth: its share of the work in each run
truth() { sed -n "s/.*steady=\([0-9]*\) varied=\([0-9]*\).*/\1 \2/p" "$1"; }
want_up=$(echo "$(truth "$T/r1.out") $(truth "$T/r2.out")" |
	awk '{ printf "%.2f", 100 * ($4 / ($3 + $4) - $2 / ($1 + $2)) }')
rep_up=$(awk -v a="$(cum "$T/r1.txt" main.varied)" -v b="$(cum "$T/r2.txt" main.varied)" 'BEGIN { printf "%.2f", b - a }')
rep_down=$(awk -v a="$(cum "$T/r1.txt" main.steady)" -v b="$(cum "$T/r2.txt" main.steady)" 'BEGIN { printf "%.2f", b - a }')
echo "    truth: main.varied +$want_up points; report: main.varied $rep_up, main.steady $rep_down"

"$PMUPROF" report -i "$T/r2.pb.gz" --diff-base "$T/r1.pb.gz" --html "$T/d.html" 2>/dev/null
"$PMUPROF" report -i "$T/r1.pb.gz" --diff-base "$T/r2.pb.gz" --html -o "$T/rev.html" 2>/dev/null
browse diff "$T/d.html" main.varied main.steady >"$T/d.out" 2>&1
browse diff "$T/rev.html" main.varied main.steady >"$T/rev.out" 2>&1
sed 's/^/    /' "$T/d.out"
if grep -q '^error ' "$T/d.out"; then
	fail browser "$(grep '^error ' "$T/d.out")"
	exit 0
fi
set -- $(awk '$1 == "change" && $2 == "main.varied" { print $3, $4 }' "$T/d.out")
up=${1:-none} upc=${2:-none}
set -- $(awk '$1 == "change" && $2 == "main.steady" { print $3, $4 }' "$T/d.out")
down=${1:-none} downc=${2:-none}
[ "$upc" = red ] && [ "$downc" = blue ] && pass colours || fail colours "main.varied $upc, main.steady $downc"
# the page's change (one call-tree node) against report's Cum% of the two files
near() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { a += 0; b += 0; exit !(a - b <= d && b - a <= d) }'; }
near "$up" "$rep_up" 0.5 && near "$down" "$rep_down" 0.5 && pass change-as-report ||
	fail change-as-report "page $up/$down, report $rep_up/$rep_down"
# and the fixture's truth, sampling noise allowed (an unnormalised diff is 100 % off)
near "$up" "$want_up" 5 && pass change-as-truth || fail change-as-truth "page $up, truth $want_up"
grep -q '^notes .*normalised' "$T/d.out" && pass says-normalised || fail says-normalised "$(grep '^notes' "$T/d.out")"
[ "$(sed -n 's/^page_errors //p' "$T/d.out")" = 0 ] && pass no-script-errors || fail no-script-errors "$(grep '^page_errors' "$T/d.out")"
# reversed: the base is the new run, the colours swap
set -- $(awk '$1 == "change" && $2 == "main.varied" { print $3, $4 }' "$T/rev.out")
neg=$(awk -v a="$up" 'BEGIN { printf "%.2f", -(a + 0) }')
[ "${2:-}" = blue ] && near "${1:-x}" "$neg" 0.01 && pass reversed || fail reversed "main.varied ${1:-none} ${2:-none}, want $neg blue"
