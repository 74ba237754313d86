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

# esbuild runs under bash's `time` (getrusage of the child, 1 ms): its own
# user and system CPU seconds, "USER SYS" in $T/cpu, the truth for the count
p=$T/esbuild.pb.gz
timed='f=$1; shift; TIMEFORMAT="%3U %3S"; { time "$@" 2>&3; } 3>&2 2>"$f"'
if command -v bash >/dev/null 2>&1; then
	set -- bash -c "$timed" bash "$T/cpu"
else
	set --
fi
"$PMUPROF" record --all-frames -e cpu-clock -F 2000 -o "$p" -- "$@" "$esb" --bundle --minify --log-level=warning \
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
# cpu-clock (no :u/:k: user and kernel time, as Go's profiler counts) takes
# 2000 samples per second of esbuild's user + system CPU, less: < 1 per
# thread for its unfinished period (the threads that got a sample, and
# nproc + 8 more that may not have: Go runs GOMAXPROCS = nproc threads of Go
# code, plus sysmon and Ms in syscalls); 10 % for expiries a loaded VM's
# steal time or IRQ latency collapses into one.  At most 1.1 * 2000 *
# (USER + SYS), plus bash's own start (20 ms; `time` counts its child only);
# the 10 % for steal time the hrtimer counts and getrusage does not.  Lost
# samples (ring overflow under load) were taken at that rate too, so they
# count.  Off by 2x fails.
if [ -s "$T/cpu" ]; then
	gotool tool pprof -raw "$p" >"$T/raw" 2>/dev/null
	th=$(grep -o 'thread:\[[0-9]*\]' "$T/raw" | sort -u | wc -l)
	lost=$(sed -n 's/^Comment: lost \([0-9]*\) samples.*/\1/p' "$T/raw" | head -1)
	n=$((total + ${lost:-0}))
	b=$(awk -v f=2000 -v th="$((th + $(nproc) + 8))" '{ u = $1; s = $2 } END {
		r = u + s; l = 0.9 * f * r - th
		printf "%d %d\n", (l > 0 ? l : 0), 1.1 * f * (r + 0.02) + th + 1 }' "$T/cpu")
	lo=${b% *} hi=${b#* }
	echo "# esbuild: $n samples (with $lost lost) for $(cat "$T/cpu") s of user/sys CPU (bash time), $th threads sampled: expected $lo..$hi"
	if [ "$n" -ge "$lo" ] && [ "$n" -le "$hi" ] && [ "$lo" -gt 0 ]; then
		pass samples
	else
		fail samples "$n samples at 2000 Hz for $(cat "$T/cpu") s user/sys CPU, expected $lo..$hi"
	fi
else
	skip samples "no CPU time of esbuild (bash missing?) to compare the count with"
fi
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
# Goroutine stacks reach runtime.goexit.  Not a share of all samples: how
# much CPU the scheduler, GC and stack growth spend on the system stack
# (rooted in mstart/mcall, or cut at a stack switch, below) grows with the
# core count.  And perf is no truth here: neither perf nor go 1.19's
# addr2line can name this Go 1.26 binary's functions (no .symtab, a newer
# pclntab), and its callchains stop at kernel.perf_event_max_stack (127)
# frames.  Instead a property of every stack: esbuild's own code
# (github.com/evanw/esbuild/...) runs only on goroutine stacks, so every
# sample with one of its frames is rooted in runtime.goexit on any machine;
# 1 % for rare honest cuts ([truncated]).  An unwinder that stops early in
# Go frames (no .eh_frame to fall back on) fails it.
c=$(awk '/github\.com\/evanw\/esbuild\// { n = $NF; t += n; if ($0 ~ /^runtime\.goexit;/) g += n }
	END { printf "%d %.2f\n", t, t ? 100 * g / t : 0 }' "$T/f")
echo "# esbuild: ${c#* } % of the ${c% *} samples in esbuild's code rooted in runtime.goexit"
if [ "${c% *}" -gt 0 ] && awk -v c="${c#* }" 'BEGIN { exit !(c >= 99) }'; then
	pass goexit-roots
else
	fail goexit-roots "${c#* } % of ${c% *} samples with an esbuild frame"
fi
# Every stack reaches its bottom: runtime.goexit (a goroutine), mstart or
# rt0_go (a thread's g0), mcall (the scheduler, no goroutine), _start (the
# bash around esbuild), or is cut honestly, [truncated] right above a stack
# switch pmuprof does not cross without --frames (morestack, systemstack,
# mcall).  Independent of CPU speed and core count; 1 % as above.
c=$(awk '{ n = $NF; t += n; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, a, ";")
	if (a[1] ~ /^(runtime\.(goexit|mstart|rt0_go|mcall)|_start)$/ ||
	    (a[1] == "[truncated]" && k > 1 && a[2] ~ /^runtime\.(morestack|systemstack|mcall)$/)) g += n; else print > "/dev/stderr" }
	END { printf "%.2f\n", t ? 100 * g / t : 0 }' "$T/f" 2>"$T/badroots")
echo "# esbuild: $c % of samples with a stack bottom or a cut at a stack switch"
if awk -v c="$c" 'BEGIN { exit !(c >= 99) }'; then
	pass stack-roots
else
	fail stack-roots "$c %; e.g. $(head -2 "$T/badroots" | cut -c1-200 | tr '\n' '|')"
fi
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
