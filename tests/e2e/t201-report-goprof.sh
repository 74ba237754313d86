#!/bin/sh
# report on a profile Go's runtime/pprof wrote (no perf needed): the table's
# layout, --top, --sort, --sample-index, --folded (root first), and exact
# agreement with go tool pprof on the same file.
. "$(dirname "$0")/lib.sh"
need_file goprof "$GOFIX/goprof"

p=$T/go.pb.gz
# runtime/pprof samples at 100 Hz of CPU time: the work is doubled until the
# profile holds >= 40 samples (so spin1's quarter is there with probability
# > 1 - 1e-5), however fast the CPU
sc=0.5
while :; do
	"$GOFIX/goprof" -o "$p" -scale $sc || { fail goprof-run; exit 1; }
	ns=$(gotool tool pprof -raw "$p" 2>/dev/null | awk '/^Samples:/ { s = 1; getline; next } /^Locations/ { s = 0 } s && /^ *[0-9]+ +[0-9]+:/ { c += $1 } END { print c + 0 }')
	[ "$ns" -ge 40 ] || [ "$sc" = 4 ] && break
	sc=$(awk -v s="$sc" 'BEGIN { print 2 * s }')
done
echo "# goprof -scale $sc: $ns samples"
src=$top/tests/go/goprof/main.go
rep() { "$PMUPROF" report -i "$p" "$@"; }

rep >"$T/tab" 2>"$T/tab.err"
check table-exit rep
if [ -s "$T/tab.err" ]; then fail table-no-stderr "$(head -1 "$T/tab.err")"; else pass table-no-stderr; fi
if head -1 "$T/tab" | grep -q '^#'; then pass table-header; else fail table-header "$(head -1 "$T/tab")"; fi
# rows: "  40.12%  40.12%   4956  main.burn4   /path/main.go:42"
bad=$(grep -v '^#' "$T/tab" | grep -v '^$' | grep -v '^ *Self% ' | grep -Evc '^ +[0-9]+\.[0-9]{2}% +[0-9]+\.[0-9]{2}% +[0-9]+ +[^ ]+( +[^ ]+)?$')
if [ "$bad" -eq 0 ]; then pass table-rows; else fail table-rows "$bad malformed rows: $(grep -v '^#' "$T/tab" | head -3 | tr '\n' '|')"; fi
# the first row is the function with the most flat samples by go tool pprof on
# the same file (spin3 has 3x spin1's iterations, but their speeds depend on
# the CPU), and spin3 is in the table
first=$(table_funcs "$T/tab" 1)
gofirst=$(gotool tool pprof -top -nodefraction=0 -nodecount=1000 "$p" 2>/dev/null | awk '/flat%/ { s = 1; next } s && NF >= 6 { print $1, $6 }' >"$T/goflat"
	awk 'NR == 1 { m = $1 } $1 == m { print $2 }' "$T/goflat" | tr '\n' ' ')
if [ -n "$first" ] && case " $gofirst" in *" $first "*) true ;; *) false ;; esac && grep -q ' main\.spin3 ' "$T/tab"; then
	pass table-top-is-spin3
else
	fail table-top-is-spin3 "first row '$first', go tool pprof's top by flat: $gofirst"
fi
line=$(grep -n '^func spin3' "$src" | cut -d: -f1)
# (Go 1.19's runtime/pprof writes no start lines: the line is optional here)
if grep -Eq "main\.spin3 +[^ ]*tests/go/goprof/main\.go(:$line)?$" "$T/tab"; then
	pass table-file-line
else
	fail table-file-line "want main.go:$line: $(grep main.spin3 "$T/tab")"
fi

# self column sorted, every cum >= self, total self 100 %
rep --top 0 >"$T/all"
if table_rows "$T/all" | awk ' { s = $1 + 0; c = $2 + 0; if (NR > 1 && s > prev + 0.001) bad = 1; if (c + 0.001 < s) bad = 1; prev = s; tot += s }
	END { exit !(bad == 0 && tot > 99.5 && tot < 100.5) }'; then
	pass table-sorted-self
else
	fail table-sorted-self "$(table_rows "$T/all" | head -5 | tr '\n' '|')"
fi
n1=$(table_rows "$T/all" | wc -l)
rep --top 2 >"$T/t2"
if [ "$(table_rows "$T/t2" | wc -l)" -eq 2 ] && [ "$n1" -gt 2 ]; then pass top-2; else fail top-2 "rows: $(table_rows "$T/t2" | wc -l) of $n1"; fi
rep --top 1 >"$T/t1"
if [ "$(table_rows "$T/t1" | wc -l)" -eq 1 ]; then pass top-1; else fail top-1; fi
# runtime.main and main.main have no self time but must be in the full table (cum)
if grep -q ' main\.main ' "$T/all" && grep -q ' runtime\.main ' "$T/all"; then pass table-all-functions; else fail table-all-functions "main.main/runtime.main missing from --top 0"; fi

rep --sort cum --top 0 >"$T/cum"
if table_rows "$T/cum" | awk ' { c = $2 + 0; if (n++ && c > prev + 0.001) bad = 1; prev = c } END { exit !(bad == 0 && n > 0) }'; then
	pass sort-cum
else
	fail sort-cum "$(table_rows "$T/cum" | head -4 | tr '\n' '|')"
fi
cf=$(table_funcs "$T/cum" 1)
case $cf in runtime.main | main.main) pass sort-cum-root ;; *) fail sort-cum-root "first by cum: $cf" ;; esac
check sort-s rep -s cum

# folded: root first, "a;b;c N", counts add up to the values go tool pprof reads
rep --folded >"$T/fold"
if grep -Evq '^[^ ;][^ ]*(;[^ ;]+)* [0-9]+$' "$T/fold" || [ ! -s "$T/fold" ]; then
	fail folded-syntax "$(grep -Ev '^[^ ;][^ ]*(;[^ ;]+)* [0-9]+$' "$T/fold" | head -2)"
else
	pass folded-syntax
fi
if grep -Eq '^runtime\.main;main\.main;main\.spin3 [0-9]+$' "$T/fold"; then pass folded-root-first; else fail folded-root-first "$(grep spin3 "$T/fold" | head -2)"; fi
gotool tool pprof -raw "$p" 2>/dev/null | awk '/^Samples:/ { s = 1; getline; next } /^Locations/ { s = 0 }
	s && /^ *[0-9]+ +[0-9]+:/ { c += $1; v += $2 } END { printf "%.0f %.0f\n", c, v }' >"$T/cv"
read -r gc gv <"$T/cv"
# folded lines end in the sample count (docs/cli: "space, count") unless
# --sample-index picks another value
if [ "$(folded_total "$T/fold")" = "$gc" ]; then pass folded-total-default; else fail folded-total-default "folded $(folded_total "$T/fold"), go tool pprof samples $gc"; fi
for si in samples 0; do
	rep --folded --sample-index $si >"$T/fs"
	if [ "$(folded_total "$T/fs")" = "$gc" ]; then pass "folded-total-$si"; else fail "folded-total-$si" "folded $(folded_total "$T/fs"), go tool pprof samples $gc"; fi
done
for si in cpu 1; do
	rep --folded --sample-index $si >"$T/fs"
	if [ "$(folded_total "$T/fs")" = "$gv" ]; then pass "folded-total-$si"; else fail "folded-total-$si" "folded $(folded_total "$T/fs"), go tool pprof cpu $gv"; fi
done

# same file, same numbers: Self% == go tool pprof's flat% (2 decimals) for every row
gotool tool pprof -top -nodefraction=0 -nodecount=1000 "$p" 2>/dev/null |
	awk '/flat%/ { s = 1; next } s && NF >= 6 { f = $2; sub(/%/, "", f); if (f + 0 > 0 && $6 !~ /^\[/) print $6, f }' |
	LC_ALL=C sort >"$T/go.flat"
table_rows "$T/all" | awk ' { f = $1; sub(/%/, "", f); if (f + 0 > 0 && $4 !~ /^\[/) print $4, f }' |
	LC_ALL=C sort >"$T/pm.flat"
if [ -s "$T/go.flat" ] && join "$T/go.flat" "$T/pm.flat" | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 0.011) bad = 1; n++ } END { exit !(bad == 0 && n >= 2) }' &&
	[ "$(cut -d' ' -f1 "$T/go.flat")" = "$(cut -d' ' -f1 "$T/pm.flat")" ]; then
	pass agrees-with-go-tool-pprof
else
	fail agrees-with-go-tool-pprof "go: $(tr '\n' ' ' <"$T/go.flat") pmuprof: $(tr '\n' ' ' <"$T/pm.flat")"
fi
