#!/bin/sh
# The frames Go's tracebacks hide are hidden as runtime/pprof hides them:
# the fixture reaches main.leafX functions through go statements with
# arguments (go obj.method(x), go f(x): the compiler's wrappers), a go
# closure, a method value, a deferred closure and defers in a loop (run by
# runtime.deferreturn), and writes its own runtime/pprof CPU profile of the
# same run.  For each leaf, the heaviest stack above it in pmuprof's profile
# is the heaviest in runtime/pprof's; none holds a wrapper,
# runtime.deferreturn or runtime.goexit; `report -s cum` does not open with
# runtime.goexit.  --all-frames shows them (goexit roots, a wrapper above
# a leaf).  Each Go version's build of the fixture.  With --creators the
# creator frames name the function with the go statement, no wrapper
# (main.modeFrames [creator];main.(*obj).method;main.leafMethod).
. "$(dirname "$0")/lib.sh"
need_perf

leaves="leafMethod leafFunc leafClosure leafValue leafDefer leafLoopDefer"
# top FOLDED LEAF: the heaviest stack from the root to main.LEAF (frames
# under it cut), "-" when none
top() {
	awk -v l="main.$2" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); k = split(s, fr, ";");
		p = ""; for (i = 1; i <= k; i++) { p = p (i > 1 ? ";" : "") fr[i]; if (fr[i] == l) { w[p] += n; break } } }
		END { b = "-"; m = 0; for (p in w) if (w[p] > m) { m = w[p]; b = p } print b }' "$1"
}
hidden='(^|;)(runtime\.goexit|runtime\.deferreturn|[^;]*\.(gowrap|deferwrap)[0-9]+|[^;]*-fm)(;|$)'

for v in go go126 go127; do
	bin=$FIX/$v/agree
	if [ ! -x "$bin" ]; then
		skip "$v" "fixture missing: $bin (run scripts/fixtures.sh)"
		continue
	fi
	"$PMUPROF" record -q -e cpu-clock -o "$T/$v.pb.gz" -- "$bin" -mode frames -secs 2 -cpuprofile "$T/$v.go.pb.gz" 2>"$T/$v.err"
	"$PMUPROF" report -i "$T/$v.pb.gz" --folded >"$T/$v.folded" 2>>"$T/$v.err"
	"$PMUPROF" report -i "$T/$v.go.pb.gz" --folded >"$T/$v.go.folded" 2>>"$T/$v.err"
	bad='' n=0
	for l in $leaves; do
		a=$(top "$T/$v.folded" $l)
		b=$(top "$T/$v.go.folded" $l)
		[ "$b" = - ] && continue # runtime/pprof's 100 Hz missed it
		n=$((n + 1))
		[ "$a" = "$b" ] || bad="$bad $l: pmuprof '$a', runtime/pprof '$b';"
	done
	echo "# $v: $n leaves compared, $(folded_total "$T/$v.folded") pmuprof and $(folded_total "$T/$v.go.folded") runtime/pprof samples"
	if [ -z "$bad" ] && [ $n -ge 4 ]; then
		pass "$v-same-stacks"
	else
		fail "$v-same-stacks" "${bad:-only $n leaves in the runtime/pprof profile} $(head -2 "$T/$v.err" | tr '\n' '|')"
	fi
	h=$(grep -E "$hidden" "$T/$v.folded" | grep -c 'main\.leaf')
	if [ "$h" -eq 0 ]; then pass "$v-none-hidden"; else fail "$v-none-hidden" "$(grep -E "$hidden" "$T/$v.folded" | grep 'main\.leaf' | head -2 | tr '\n' '|')"; fi
	"$PMUPROF" report -i "$T/$v.pb.gz" -s cum >"$T/$v.cum"
	first=$(table_funcs "$T/$v.cum" 1)
	if [ -n "$first" ] && [ "$first" != runtime.goexit ]; then pass "$v-cum-no-goexit"; else fail "$v-cum-no-goexit" "first row '$first'"; fi
done

# --all-frames: the wrappers and goexit are there
bin=$FIX/go126/agree
[ -x "$bin" ] || bin=$FIX/go/agree
need_file all-frames "$bin"
"$PMUPROF" record -q --all-frames -e cpu-clock -o "$T/all.pb.gz" -- "$bin" -mode frames -secs 1 2>"$T/all.err"
"$PMUPROF" report -i "$T/all.pb.gz" --folded >"$T/all.folded"
g=$(awk '/^runtime\.goexit;.*main\.leaf/ { t += $NF } END { print t + 0 }' "$T/all.folded")
w=$(top "$T/all.folded" leafMethod)
case $w in
*";main.leafMethod") ;;
*) w= ;;
esac
if [ "$g" -gt 0 ] && [ -n "$w" ] && [ "$w" != "$(top "$T/go126.folded" leafMethod)" ] &&
	[ "$(echo "$w" | tr ';' '\n' | wc -l)" -gt "$(top "$T/go126.folded" leafMethod | tr ';' '\n' | wc -l)" ]; then
	pass all-frames
else
	fail all-frames "$g samples on goexit roots; leafMethod under '$w'"
fi
# report --all-frames wants a capture
expect_fail report-all-frames-pprof 2 'all-frames needs a capture' "$PMUPROF" report --all-frames -i "$T/all.pb.gz"

# --creators: the go statement's function above the goroutine, no wrapper
if ! tracefs_ok; then
	skip creators "no tracefs for pmuprof (the creation probe is defined there)"
else
	"$PMUPROF" record -q --creators -e cpu-clock -o "$T/cr.pb.gz" -- "$bin" -mode frames -secs 1 2>"$T/cr.err"
	"$PMUPROF" report -i "$T/cr.pb.gz" --folded >"$T/cr.folded"
	c=$(top "$T/cr.folded" leafMethod)
	case $c in
	"runtime.main [creator];main.main [creator];main.modeFrames [creator];main.(*obj).method;main.leafMethod") pass creators ;;
	*) fail creators "leafMethod under '$c'" ;;
	esac
fi
