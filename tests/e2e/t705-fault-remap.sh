#!/bin/sh
# Faults: a target that maps code, runs it, unmaps it and maps it again
# (two small files, code0.bin loops 200k times per call, code1.bin 400k),
# over a thousand times while profiled.  Samples in the mapped code must be
# named after the file that was mapped at that moment (so code1/code0 is
# the ratio of the CPU times the fixture measured in each, about 2), under
# main.remap, and nowhere else.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

out=$T/prof.pb.gz
"$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode remap -secs 3 -cpu "$T/cpu" >"$T/o" 2>"$T/e"
rc=$?
if [ $rc -eq 0 ]; then pass status; else fail status "exit $rc: $(head -2 "$T/e" | tr '\n' '|')"; fi
n=$(sed -n 's/^remaps //p' "$T/o")
if [ -n "$n" ] && [ "$n" -ge 100 ]; then pass remapped; else fail remapped "only '$n' remaps"; fi
if ! "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
	fail readable "$(head -1 "$T/f.err")"
	exit 0
fi
pass readable
# (a signal can interrupt the code: the handler's frames then follow it, leaf-ward)
awk '{ n = $NF; t += n }
	/;code0\.bin\+0x[0-9a-f]+ [0-9]+$/ { c0 += n; if ($0 ~ /;main\.remap;code0/) r0 += n }
	/;code1\.bin\+0x[0-9a-f]+ [0-9]+$/ { c1 += n; if ($0 ~ /;main\.remap;code1/) r1 += n }
	/code[01]\.bin/ && !/code[01]\.bin\+0x[0-9a-f]+;runtime\.sigtramp/ { any += n }
	END { printf "%d %d %d %d %d %d\n", t, c0, c1, r0, r1, any }' "$T/f" >"$T/counts"
read -r total c0 c1 r0 r1 any <"$T/counts"
# the truth: the CPU seconds the fixture's thread spent in each file's code
# (CLOCK_THREAD_CPUTIME_ID around the calls) and in all (getrusage)
t0=$(sed -n 's/^codecpu code0=\([0-9.]*\) .*/\1/p' "$T/o")
t1=$(sed -n 's/^codecpu .*code1=\([0-9.]*\).*/\1/p' "$T/o")
tc=$(sed -n 's/^cpu //p' "$T/cpu" 2>/dev/null)
echo "# samples: code0 $c0, code1 $c1 of $total; fixture: code0 ${t0:-?} s, code1 ${t1:-?} s of ${tc:-?} s CPU"
# the share of samples in the mapped code: that of the CPU time, +-10 points
# (the fixture's two clock reads per 20 calls are in neither)
if [ "$total" -gt 0 ] && awk -v c="$((c0 + c1))" -v t="$total" -v a="${t0:-0}" -v b="${t1:-0}" -v p="${tc:-0}" \
	'BEGIN { s = 100 * c / t; w = 100 * (a + b) / p; exit !(p > 0 && s >= w - 10 && s <= w + 10) }'; then
	pass code-sampled
else
	fail code-sampled "code0 $c0 + code1 $c1 of $total samples; the fixture spent ${t0:-?} + ${t1:-?} of ${tc:-?} s there"
fi
# code1/code0 against the measured ratio r: which file a sample lands in is
# a draw (the 1 ms timer against ~1.2/2.4 ms blocks of calls), so ln of the
# ratio has sd ~ sqrt(1/c0 + 1/c1): within 4 of them.  It must also tell
# 2 from 1 (every sample named after either file alike), so 4 sd < ln 2.
if [ "$c0" -gt 0 ] && [ "$c1" -gt 0 ] && awk -v a="$c1" -v b="$c0" -v x="${t1:-0}" -v y="${t0:-0}" \
	'BEGIN { if (x <= 0 || y <= 0) exit 1; sd = sqrt(1 / a + 1 / b); d = log(a / b) - log(x / y);
		exit !(4 * sd < log(2) && d <= 4 * sd && d >= -4 * sd) }'; then
	pass right-file
else
	fail right-file "code1 $c1 / code0 $c0, the fixture measured ${t1:-?} / ${t0:-?} s"
fi
if [ $((r0 + r1)) -eq $((c0 + c1)) ] && [ "$any" -eq $((c0 + c1)) ]; then
	pass stacks
else
	fail stacks "under main.remap $r0+$r1 of $c0+$c1; any mention $any"
fi
# the table: one row per name, as in the folded stacks
"$PMUPROF" report -i "$out" >"$T/r" 2>&1
dups=$(table_rows "$T/r" | awk '$4 ~ /^code[01]\.bin\+/ { print $4 }' | sort | uniq -d | tr '\n' ' ')
if [ -z "$dups" ]; then pass table-one-row; else fail table-one-row "more than one row for: $dups"; fi
