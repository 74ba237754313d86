#!/bin/sh
# san: no (the page's writer runs under ASan in the unit test test-html; here the browser's time)
# report --html: the flame-graph page in a real browser (Debian's chromium,
# headless, driven by puppeteer-core through tests/e2e/browse.js): the
# root's and main.work's shares as pmuprof report gives them, the search's
# count of frames against the call tree of report --folded, the zoom of a
# click, the creator switch, the sample-type switch, the kinds' colours,
# no network; a screenshot kept in tests/.work/html/.  And two real clients
# of pmuprof's pprof: speedscope (npm) shows the same top functions as
# report, go tool pprof -http serves a flame graph with the hot function.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd node node
need_cmd chromium chromium
need_file creators "$GOFIX/creators" "$GOFIX/shares"
need_file puppeteer-core "$NPM/puppeteer-core/package.json" "$NPM/speedscope/package.json"
browse() { node "$top/tests/e2e/browse.js" "$@"; }
kept=$FIX/html
mkdir -p "$kept"
val() { sed -n "s/^$1 //p" "$2" | head -1; }

# ---- options: one clear line each ----
# --creators needs uprobes (tracefs): without them, the page is tested without creators
creators=--creators
"$PMUPROF" record -q -e cpu-clock -F 1000 --creators --kernel -o "$T/c.pb.gz" -- \
	"$GOFIX/creators" -duration 1s >/dev/null 2>"$T/rec.err" || {
	creators=
	"$PMUPROF" record -q -e cpu-clock -F 1000 --kernel -o "$T/c.pb.gz" -- \
		"$GOFIX/creators" -duration 1s >/dev/null 2>"$T/rec.err" || fail record "$(head -1 "$T/rec.err")"
}
expect_fail diff-base-needs-html 2 'diff-base.*--html' "$PMUPROF" report -i "$T/c.pb.gz" --diff-base "$T/c.pb.gz"
expect_fail nodefraction-needs-html 2 'nodefraction.*--html' "$PMUPROF" report -i "$T/c.pb.gz" --nodefraction 0.1
expect_fail nodefraction-range 2 'invalid --nodefraction' "$PMUPROF" report -i "$T/c.pb.gz" --html "$T/x.html" --nodefraction 2
expect_fail html-and-folded 2 'give one' "$PMUPROF" report -i "$T/c.pb.gz" --html "$T/x.html" --folded
expect_fail two-outputs 2 'both name' "$PMUPROF" report -i "$T/c.pb.gz" --html "$T/x.html" -o "$T/y.html"
expect_fail operand-without-html 2 'unexpected argument' "$PMUPROF" report -i "$T/c.pb.gz" "$T/x.html"
expect_fail missing-base 1 "cannot open '.*nope.pb.gz'" "$PMUPROF" report -i "$T/c.pb.gz" --html "$T/x.html" --diff-base "$T/nope.pb.gz"
expect_fail bad-sample-index 2 "no sample type 'nope'" "$PMUPROF" report -i "$T/c.pb.gz" --html "$T/x.html" --sample-index nope
[ -e "$T/x.html" ] && fail no-page-on-error "$T/x.html written" || pass no-page-on-error

# ---- the page: a file, and the same bytes on stdout ----
"$PMUPROF" report -i "$T/c.pb.gz" --html "$T/c.html" --nodefraction 0 2>"$T/w.err"
grep -q "^pmuprof: wrote $T/c.html" "$T/w.err" && pass wrote-line || fail wrote-line "$(cat "$T/w.err")"
"$PMUPROF" report -i "$T/c.pb.gz" --html --nodefraction 0 -o - >"$T/c-stdout.html" 2>"$T/w2.err"
check stdout-same-page cmp "$T/c.html" "$T/c-stdout.html"
# self-contained: no script, style, font or image from elsewhere
if grep -Eiq '<script[^>]* src=|<link |@import|url\(|https?://' "$T/c.html"; then
	fail self-contained "$(grep -Eio '<script[^>]* src=|<link |@import|url\(|https?://[^"]*' "$T/c.html" | head -1)"
else
	pass self-contained
fi

"$PMUPROF" report -i "$T/c.pb.gz" --top 0 >"$T/c.txt"
"$PMUPROF" report -i "$T/c.pb.gz" --folded --sample-index cpu >"$T/c.folded"
want_cum=$(awk '$4 == "main.work" { sub(/%/, "", $2); print $2 }' "$T/c.txt")
want_total=$(sed -n 's/^# total cpu: //p' "$T/c.txt")
# distinct call-tree nodes of main.work: distinct prefixes of the folded stacks ending in it
want_nodes=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); p = "";
	for (i = 1; i <= n; i++) { p = p ";" f[i]; if (f[i] == "main.work") seen[p] = 1 } }
	END { c = 0; for (k in seen) c++; print c }' "$T/c.folded")
browse page "$T/c.html" "$kept/t403-creators.png" main.work >"$T/page.out" 2>&1
if grep -q '^error ' "$T/page.out"; then
	fail browser "$(grep '^error ' "$T/page.out")"
	exit 0
fi
sed 's/^/    /' "$T/page.out" | grep -v '^    header '
[ "$(val page_errors "$T/page.out")" = 0 ] && pass no-script-errors || fail no-script-errors "$(val page_errors "$T/page.out")"
[ "$(val requests "$T/page.out")" = 0 ] && pass no-network || fail no-network "$(val requests "$T/page.out")"
[ "$(val root_share "$T/page.out")" = 100.00 ] && pass root-share || fail root-share "$(val root_share "$T/page.out")"
[ "$(val root_total "$T/page.out")" = "$want_total" ] && pass root-total-as-report ||
	fail root-total-as-report "page $(val root_total "$T/page.out"), report $want_total"
[ -n "$want_cum" ] && [ "$(val match_share "$T/page.out")" = "$want_cum" ] && pass func-share-as-report ||
	fail func-share-as-report "page $(val match_share "$T/page.out"), report Cum% $want_cum"
[ "$(val match_count "$T/page.out")" = "$want_nodes" ] && pass search-count ||
	fail search-count "page $(val match_count "$T/page.out"), folded stacks $want_nodes"
[ "$(val match_drawn_highlighted "$T/page.out")" = "$(val match_drawn_named "$T/page.out")" ] &&
	[ "$(val match_drawn_named "$T/page.out")" -gt 0 ] && pass search-highlight ||
	fail search-highlight "$(val match_drawn_highlighted "$T/page.out") highlighted, $(val match_drawn_named "$T/page.out") drawn"
[ "$(val func_kind "$T/page.out")" = Go ] && pass kind-go || fail kind-go "$(val func_kind "$T/page.out")"
case $(val func_tip_file "$T/page.out") in */tests/go/creators/main.go*) pass tip-file ;; *) fail tip-file "$(val func_tip_file "$T/page.out")" ;; esac
# zoom: the clicked frame fills the width, the crumb names it; reset clears it
awk -v b="$(val zoom_width_before "$T/page.out")" -v a="$(val zoom_width_after "$T/page.out")" \
	-v f="$(val zoom_full_width "$T/page.out")" 'BEGIN { exit !(a == f && b < f) }' &&
	[ "$(val zoom_crumb "$T/page.out")" = main.work ] && pass click-zoom ||
	fail click-zoom "width $(val zoom_width_before "$T/page.out") -> $(val zoom_width_after "$T/page.out") of $(val zoom_full_width "$T/page.out"), crumb '$(val zoom_crumb "$T/page.out")'"
[ "$(val reset_crumb "$T/page.out")" = - ] && pass reset || fail reset "$(val reset_crumb "$T/page.out")"
# creators: drawn, gone with the switch off (main.work's share unchanged), back on
on=$(val creators_drawn_on "$T/page.out")
if [ -z "$creators" ] || ! grep -q ' \[creator\]' "$T/c.folded"; then
	skip creators-switch "no creator frames in the profile (record --creators: $(head -1 "$T/rec.err"))"
else
[ "${on:-0}" -gt 0 ] && [ "$(val creators_drawn_off "$T/page.out")" = 0 ] &&
	[ "$(val creators_drawn_back "$T/page.out")" = "$on" ] &&
	[ "$(val func_total_share_off "$T/page.out")" = "$want_cum" ] && pass creators-switch ||
	fail creators-switch "on $on, off $(val creators_drawn_off "$T/page.out"), back $(val creators_drawn_back "$T/page.out"), main.work off $(val func_total_share_off "$T/page.out") want $want_cum"
fi
# kinds: Go, Go runtime, kernel and creator frames drawn, in hues of their own
hues=$(val kind_hues "$T/page.out")
ok=1
need=Go_runtime
grep -q '_\[k\]' "$T/c.folded" && need="$need kernel" # kernel frames are sampled where the machine has them
grep -q ' \[creator\]' "$T/c.folded" && need="$need creator"
for k in Go $need; do
	case " $hues " in *" $k:"*) ;; *) ok=0 ;; esac
done
# no two kinds' hue ranges overlap
echo "$hues" | tr ' ' '\n' | awk -F'[:-]' 'NF == 3 { lo[NR] = $2; hi[NR] = $3; n = NR }
	END { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (lo[i] <= hi[j] && lo[j] <= hi[i]) exit 1 }' || ok=0
[ $ok = 1 ] && pass kind-colours || fail kind-colours "$hues (want Go $need)"
# the sample-type switch: the header follows, the shares stay (samples and cpu agree here)
case $(val switched_header "$T/page.out") in *"samples/count (shown)"*) pass type-switch ;;
*) fail type-switch "$(val switched_header "$T/page.out")" ;; esac
case $(val header "$T/page.out") in *"lost 0 samples"*"duration:"*|*"duration:"*"lost "*" samples"*) pass header ;;
*) fail header "$(val header "$T/page.out")" ;; esac
case $(val legend "$T/page.out") in *Go*runtime*native*kernel*creator*) pass legend ;; *) fail legend "$(val legend "$T/page.out")" ;; esac
[ -s "$kept/t403-creators.png" ] && pass screenshot || fail screenshot "no $kept/t403-creators.png"

# ---- speedscope reads pmuprof's pprof: the same top functions by self ----
"$PMUPROF" record -q -e cpu-clock -F 2000 -o "$T/s.pb.gz" -- "$GOFIX/shares" -scale 0.3 >/dev/null 2>&1
"$PMUPROF" report -i "$T/s.pb.gz" --top 4 >"$T/s.txt"
export SPEEDSCOPE="$NPM/speedscope"
browse speedscope "$T/s.pb.gz" 4 "$kept/t403-speedscope.png" >"$T/ss.out" 2>&1
sed 's/^/    /' "$T/ss.out"
want=$(table_funcs "$T/s.txt" 4 | tr '\n' ' ')
got=$(awk '/^top / { printf "%s ", $2 }' "$T/ss.out")
[ -n "$got" ] && [ "$got" = "$want" ] && pass speedscope-top || fail speedscope-top "speedscope: $got; report: $want"
# speedscope's shares (2 significant digits) within 1 point of report's
bad=$(table_rows "$T/s.txt" | head -4 | awk '{ sub(/%/, "", $1); print $4, $1 }' | while read -r f s; do
	g=$(awk -v f="$f" '$1 == "top" && $2 == f { print $3 }' "$T/ss.out")
	awk -v a="$s" -v b="${g:-x}" -v f="$f" 'BEGIN { if (b == "x" || a - b > 1 || b - a > 1) print f ":" a "/" b }'
done)
[ -z "$bad" ] && pass speedscope-shares || fail speedscope-shares "report/speedscope: $bad"

# ---- go tool pprof -http serves its flame graph of pmuprof's file ----
if [ -x "$GO" ]; then
	port=$((20000 + $$ % 30000))
	GOCACHE=$FIX/gocache "$GO" tool pprof -http="127.0.0.1:$port" -no_browser "$T/s.pb.gz" >"$T/pp.out" 2>&1 &
	ppid=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q 'Serving web UI' "$T/pp.out"; do sleep 0.2; i=$((i + 1)); done
	hot=$(table_funcs "$T/s.txt" 1)
	browse text "http://127.0.0.1:$port/ui/flamegraph" "$hot" >"$T/ppweb.out" 2>&1
	kill "$ppid" 2>/dev/null
	wait "$ppid" 2>/dev/null
	[ "$(val found "$T/ppweb.out")" = yes ] && pass pprof-http-flamegraph ||
		fail pprof-http-flamegraph "$hot not in /ui/flamegraph: $(head -2 "$T/ppweb.out" | tr '\n' ' ') $(head -1 "$T/pp.out")"
else
	skip pprof-http-flamegraph "no Go 1.19 at $GO"
fi
