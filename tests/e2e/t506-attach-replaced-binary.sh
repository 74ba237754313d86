#!/bin/sh
# A binary deleted and replaced on disk after the target started still
# symbolizes: pmuprof opens the mapped file through /proc/PID/map_files (or
# /proc/PID/exe), not the path, and keeps the kernel's path as the pprof
# mapping's name.
. "$(dirname "$0")/lib.sh"
need_perf
need_file attach "$GOFIX/attach" "$GOFIX/shares"

cp "$GOFIX/attach" "$T/srv"
"$T/srv" -scale 0.3 >"$T/fix.out" 2>&1 &
f=$!
i=0
while ! grep -q '^ready' "$T/fix.out" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
# replace the file under the same name with a different Go program
rm "$T/srv"
cp "$GOFIX/shares" "$T/srv"
"$PMUPROF" record -e cpu-clock -p $f -o "$T/r.pb.gz" 2>"$T/rec.err" &
r=$!
i=0
while ! grep -q '^pmuprof: attached' "$T/rec.err" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill -USR1 $f
wait_bounded $f 30
wait_bounded $r 30
rc=$?
"$PMUPROF" report -i "$T/r.pb.gz" --folded >"$T/r.folded" 2>&1
s3=$(share "$T/r.folded" main.late3)
# the truth: main.late3's share of the CPU time the fixture measured (~50 %)
w3=$(sed -n '/^cpu round=1 /s/.* late3=\([0-9.]*\) process=\([0-9.]*\).*/\1 \2/p' "$T/fix.out" | awk '$2 > 0 { printf "%.1f", 100 * $1 / $2 }')
echo "# main.late3 $s3 % of samples, ${w3:-?} % of the fixture's CPU time"
if [ $rc -eq 0 ] && [ -n "$w3" ] && awk -v s="$s3" -v w="$w3" 'BEGIN { exit !(s >= w - 5 && s <= w + 5) }'; then
	pass deleted-binary-symbolized
else
	fail deleted-binary-symbolized "exit $rc, main.late3 $s3 %, the fixture measured ${w3:-?} % +- 5: $(sort -k2 -n -r "$T/r.folded" | head -2 | tr '\n' '|')"
fi
if grep -q 'main\.burn' "$T/r.folded"; then fail not-the-replacement "symbols of the new file"; else pass not-the-replacement; fi
if gotool tool pprof -raw "$T/r.pb.gz" 2>/dev/null | grep -q "$T/srv"; then
	pass mapping-keeps-kernel-path
else
	fail mapping-keeps-kernel-path "$(gotool tool pprof -raw "$T/r.pb.gz" 2>&1 | sed -n '/^Mappings/,$p' | head -4 | tr '\n' '|')"
fi
