#!/bin/sh
# A real Go binary from npm: esbuild (Go 1.26, no .symtab, no .eh_frame)
# bundling a generated project of 400 JavaScript modules.  >= 95 % of all
# frames (weighted by count) must resolve to Go function names, the bundle
# must still come out right, and esbuild's own functions must be hot.
. "$(dirname "$0")/lib.sh"
need_perf
esb=$NPM/@esbuild/linux-x64/bin/esbuild
need_file esbuild "$esb"

# the input: 400 modules of 60 functions (scripts/gen-js.sh)
gen_js() { "$top/scripts/gen-js.sh" "$@"; }
gen_js "$T/src" 400 60

p=$T/esbuild.pb.gz
"$PMUPROF" record -e cpu-clock -F 2000 -o "$p" -- "$esb" --bundle --minify --log-level=warning \
	--outfile="$T/out.js" "$T/src/index.js" 2>"$T/e"
rc=$?
if [ $rc -eq 0 ]; then pass record; else fail record "exit $rc: $(head -2 "$T/e" | tr '\n' '|')"; fi
if [ -s "$T/out.js" ] && { ! command -v node >/dev/null || [ "$(node "$T/out.js")" = 400 ]; }; then
	pass bundle-ok
else
	fail bundle-ok "esbuild's output is wrong under pmuprof"
fi

"$PMUPROF" report -i "$p" --folded >"$T/f" 2>"$T/r.err" || fail report "$(head -1 "$T/r.err")"
total=$(folded_total "$T/f")
if [ "$total" -ge 1000 ]; then pass samples; else fail samples "$total samples (expected ~1-2 s of CPU at 2000 Hz)"; fi
r=$(resolved_pct "$T/f")
echo "# esbuild: $total samples, $r % of frames resolved to names"
if awk -v r="$r" 'BEGIN { exit !(r >= 95) }'; then
	pass resolved-95
else
	fail resolved-95 "$r % resolved; unresolved: $(tr ';' '\n' <"$T/f" | sed 's/ [0-9]*$//' | grep -v '^[A-Za-z_][^ ]*\.[^ ]' | sort | uniq -c | sort -rn | head -3 | tr '\n' ' ')"
fi
# esbuild's parser and printer are the hot part of a bundle
if grep -q 'github.com/evanw/esbuild/internal/js_parser' "$T/f" && grep -q 'github.com/evanw/esbuild/internal/js_printer' "$T/f"; then
	pass esbuild-functions
else
	fail esbuild-functions "no js_parser/js_printer frames"
fi
# goroutine stacks reach runtime.goexit
c=$(awk '{ n = $NF; t += n; if ($0 ~ /^runtime\.goexit;/) g += n } END { printf "%.1f\n", t ? 100 * g / t : 0 }' "$T/f")
echo "# esbuild: $c % of samples rooted in runtime.goexit"
if awk -v c="$c" 'BEGIN { exit !(c >= 80) }'; then pass goexit-roots; else fail goexit-roots "$c %"; fi
# stacks are deep: esbuild's parser recurses; at least one stack over 20 frames
d=$(awk '{ k = split($0, a, ";"); if (k > m) m = k } END { print m + 0 }' "$T/f")
if [ "$d" -gt 20 ]; then pass deep-stacks; else fail deep-stacks "deepest stack $d frames"; fi
# go tool pprof reads it and names the same top function
gotool tool pprof -top "$p" >"$T/go.top" 2>"$T/go.err"
if [ $? -eq 0 ] && grep -q 'flat%' "$T/go.top"; then pass go-tool-pprof-reads; else fail go-tool-pprof-reads "$(head -2 "$T/go.err")"; fi
# a closed pipe is not an error (when the output is big enough to hit it)
"$PMUPROF" report -i "$p" --folded >"$T/big"
if [ "$(wc -c <"$T/big")" -gt 200000 ]; then
	{ "$PMUPROF" report -i "$p" --folded 2>"$T/pipe.err"; echo $? >"$T/pipe.rc"; } | head -1 >/dev/null
	if [ "$(cat "$T/pipe.rc")" = 0 ] && [ ! -s "$T/pipe.err" ]; then
		pass closed-pipe
	else
		fail closed-pipe "exit $(cat "$T/pipe.rc"): $(head -1 "$T/pipe.err")"
	fi
else
	skip closed-pipe "folded output only $(wc -c <"$T/big") bytes, too small to fill a pipe"
fi
