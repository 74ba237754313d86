#!/bin/sh
# Faults: a target that maps code, runs it, unmaps it and maps it again
# (two small files, code0.bin loops 200k times per call, code1.bin 400k),
# over a thousand times while profiled.  Samples in the mapped code must be
# named after the file that was mapped at that moment (so code1/code0 is
# about 2), under main.remap, and nowhere else.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

out=$T/prof.pb.gz
"$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode remap -secs 3 >"$T/o" 2>"$T/e"
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
if [ "$total" -gt 0 ] && [ $((100 * (c0 + c1) / total)) -ge 50 ]; then
	pass code-sampled
else
	fail code-sampled "code0 $c0 + code1 $c1 of $total samples"
fi
if [ "$c0" -gt 0 ] && awk -v a="$c1" -v b="$c0" 'BEGIN { r = a / b; exit !(r > 1.4 && r < 2.8) }'; then
	pass right-file
else
	fail right-file "code1 $c1 / code0 $c0, expected about 2"
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
