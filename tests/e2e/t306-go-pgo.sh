#!/bin/sh
# san: no (the compiler's time; pmuprof's part is t301's under ASan)
# PGO round trip: Go's compiler reads CPU profiles for profile-guided
# optimisation (go build -pgo=FILE), keyed by function name and call-site
# line less the function's start line (pprof's Function.start_line and
# Line.line), weighted by samples/count or cpu/nanoseconds.  The stripped
# Go 1.26 build of tests/go/pgo runs once under pmuprof record while
# writing runtime/pprof's profile of the same run (-cpuprofile); the main
# package is then compiled by Go 1.26 with each profile (go tool compile
# -pgoprofile, -d=pgodebug=1 -m: the decisions of go build -pgo for that
# package, without rebuilding the standard library with PGO) and the
# hot-call-site decisions, inlining and devirtualization, must be the same,
# and include the fixture's designed ones (main.step in main.hotLoop, mix
# in main.step, an inlined frame; main.blend in main.warmLoop; the Shape
# interface call devirtualized to (*square).Area) and no call site of
# main.cold.  The start lines of every main function both profiles hold
# must agree, and pmuprof must give each function one.  Every address of
# main's code in both profiles must hold the same lines (a caller's at its
# return address less one, as runtime/pprof writes it: a sample that
# stopped at the instruction after a call must not lend that call's
# location its own lines), the call of mix in the inlined step among them.
. "$(dirname "$0")/lib.sh"
need_perf
G=$(cat "$FIX/go126.go" 2>/dev/null)
if [ -z "$G" ] || [ ! -x "$G" ]; then
	skip all "no Go 1.26 (scripts/fixtures.sh records it in $FIX/go126.go)"
	exit 0
fi
fx=$FIX/go126/pgo-stripped
need_file pgo "$fx"
src=$top/tests/go/pgo
export GOENV=off GOTOOLCHAIN=local GO111MODULE=off GOFLAGS='' GOPATH=$FIX/gopath GOCACHE=$FIX/gocache-go126

# runtime/pprof samples at 100 Hz: the run is doubled until its profile
# holds >= 150 samples (a loaded machine gives the fixture less CPU)
d=4
while :; do
	"$PMUPROF" record -q -e cpu-clock -F 997 -o "$T/pm.pb.gz" -- "$fx" -duration ${d}s -cpuprofile "$T/rp.pb.gz" 2>"$T/pm.err" ||
		{ fail record "$(head -2 "$T/pm.err" | tr '\n' '|')"; exit 0; }
	nrp=$("$PMUPROF" report -i "$T/rp.pb.gz" --folded | awk '{ t += $NF } END { print t + 0 }')
	[ "$nrp" -ge 150 ] || [ $d -ge 16 ] && break
	d=$((d * 2))
done
npm=$("$PMUPROF" report -i "$T/pm.pb.gz" --folded | awk '{ t += $NF } END { print t + 0 }')
echo "# one ${d} s run: pmuprof $npm samples, runtime/pprof $nrp"

# the main package compiled with each profile
(cd "$src" && "$G" list -export -deps -f '{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}' . >"$T/importcfg") ||
	{ fail importcfg "go list -export failed"; exit 0; }
for p in pm rp; do
	(cd "$src" && "$G" tool compile -p main -importcfg "$T/importcfg" -pgoprofile="$T/$p.pb.gz" \
		-d=pgodebug=1 -m -o "$T/$p.o" main.go) >"$T/$p.m" 2>&1 ||
		{ fail "compile-$p" "$(grep -v '^hot' "$T/$p.m" | head -2 | tr '\n' '|')"; exit 0; }
	# the hot-call-site decisions, paths cut to the file name
	grep -E '^hot-budget check allows inlining|PGO devirtualizing' "$T/$p.m" |
		sed 's|[^ ]*/main\.go|main.go|g' | LC_ALL=C sort -u >"$T/$p.dec"
done
sed 's/^/# pmuprof:       /' "$T/pm.dec"
if cmp -s "$T/pm.dec" "$T/rp.dec"; then
	pass pgo-same-decisions
else
	# what the compiler saw: the callers of the hot leaves in each profile
	for p in pm rp; do
		"$G" tool pprof -peek 'main\.(mix|blend)$' "$T/$p.pb.gz" 2>/dev/null |
			grep -E '^ +[0-9.]+[a-z]* +[0-9.]+%' | sed "s/^/# $p peek: /" | head -12
	done
	fail pgo-same-decisions "$(diff "$T/rp.dec" "$T/pm.dec" | grep '^[<>]' | tr '\n' '|')"
fi
miss=
grep -q 'call main\.step .* in function main\.hotLoop$' "$T/pm.dec" || miss="$miss step-in-hotLoop"
grep -q 'call main\.mix .* in function main\.step$' "$T/pm.dec" || miss="$miss mix-in-step"
grep -q 'call main\.blend .* in function main\.warmLoop$' "$T/pm.dec" || miss="$miss blend-in-warmLoop"
grep -q 'PGO devirtualizing interface call .* to (\*square)\.Area$' "$T/pm.dec" || miss="$miss devirtualize-Area"
grep -q 'main\.cold' "$T/pm.dec" && miss="$miss (a call site of main.cold is hot)"
if [ -z "$miss" ]; then pass pgo-designed-decisions; else fail pgo-designed-decisions "missing:$miss"; fi

# start lines: function -> s= of go tool pprof -raw, for main's functions
starts() {
	"$G" tool pprof -raw "$1" 2>/dev/null | awk '/^Locations/ { l = 1; next } /^Mappings/ { l = 0 }
		l { for (i = 1; i <= NF; i++) if ($i ~ /^main\./ && $NF ~ /^s=/) print $i, substr($NF, 3) }' | LC_ALL=C sort -u
}
starts "$T/pm.pb.gz" >"$T/pm.s"
starts "$T/rp.pb.gz" >"$T/rp.s"
# one function, one start line: a second would key PGO's edges wrongly
dup=$(awk '{ n[$1]++ } n[$1] == 2 { printf " %s", $1 }' "$T/pm.s")
[ -z "$dup" ] || fail start-lines-one "functions with two start lines in pmuprof's profile:$dup ($(tr '\n' ' ' <"$T/pm.s"))"
[ -n "$dup" ] || pass start-lines-one
both=$(awk 'NR == FNR { s[$1] = $2; next } ($1 in s) { n++; if (s[$1] != $2 || $2 == 0) bad = bad " " $1 ":" s[$1] "/" $2 } END { print n + 0, bad }' "$T/pm.s" "$T/rp.s")
set -- $both
echo "# start lines compared: $1 functions of main"
if [ "$1" -ge 5 ] && [ $# -eq 1 ]; then
	pass start-lines
else
	shift
	fail start-lines "pmuprof/runtime-pprof: $*"
fi

# locations: the address and the lines (function:line, inlined first) of each of main's
locs() {
	"$G" tool pprof -raw "$1" 2>/dev/null | awk '/^Locations/ { l = 1; next } /^Mappings/ { l = 0 }
		!l { next }
		$2 ~ /^0x/ { if (a != "") print a, v; a = $2; v = ""; f = 3 + ($3 ~ /^M=/) }
		$1 !~ /:$/ { f = 1 }
		{ n = split($(f + 1), fl, ":"); v = v (v == "" ? "" : "|") $f ":" fl[n - 1]; f = 0 }
		END { if (a != "") print a, v }' | grep ' main\.' | LC_ALL=C sort
}
locs "$T/pm.pb.gz" >"$T/pm.l"
locs "$T/rp.pb.gz" >"$T/rp.l"
LC_ALL=C join "$T/pm.l" "$T/rp.l" >"$T/both.l"
nb=$(wc -l <"$T/both.l")
bad=$(awk '$2 != $3 { printf " %s pmuprof %s runtime/pprof %s;", $1, $2, $3 }' "$T/both.l" | head -c 600)
call=$(awk '$2 == $3 && $2 ~ /^main\.step:[0-9]+\|main\.hotLoop:[0-9]+$/' "$T/both.l" | wc -l)
echo "# locations: $nb addresses of main's in both profiles, $call of them the call of mix in step"
if [ -z "$bad" ] && [ "$nb" -ge 20 ] && [ "$call" -ge 1 ]; then
	pass locations-as-runtime-pprof
else
	fail locations-as-runtime-pprof "$nb in both, $call the call in step:$bad"
fi
