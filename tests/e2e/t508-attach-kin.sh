#!/bin/sh
# -p of pmuprof's own shell (an ancestor) or of pmuprof itself is taken,
# with one warning line saying what it is; an unrelated process, a thread
# of one (-t) and init get none.
. "$(dirname "$0")/lib.sh"
need_perf
# the shell that runs pmuprof: $$ of the sh -c below
sh -c '"$1" record -q -e cpu-clock --duration 0.2 -o "$2" -p $$' sh "$PMUPROF" "$T/a.pb.gz" 2>"$T/a.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$T/a.err")" -eq 1 ] && grep -q 'warning: -p [0-9]* is an ancestor of pmuprof' "$T/a.err"; then
	pass ancestor-warned
else
	fail ancestor-warned "exit $rc: $(tr '\n' '|' <"$T/a.err")"
fi
# the grandparent too
sh -c 'sh -c "\"\$1\" record -q -e cpu-clock --duration 0.2 -o \"\$2\" -p $$" sh "$1" "$2"' sh "$PMUPROF" "$T/b.pb.gz" 2>"$T/b.err"
if grep -q 'is an ancestor of pmuprof' "$T/b.err"; then pass grandparent-warned; else fail grandparent-warned "$(tr '\n' '|' <"$T/b.err")"; fi
# pmuprof itself: exec keeps the pid, so $$ of this sh is pmuprof's
sh -c 'exec "$1" record -q -e cpu-clock --duration 0.2 -o "$2" -p $$' sh "$PMUPROF" "$T/c.pb.gz" 2>"$T/c.err"
if grep -q 'warning: -p [0-9]* is pmuprof itself' "$T/c.err"; then pass self-warned; else fail self-warned "$(tr '\n' '|' <"$T/c.err")"; fi
# an unrelated process, and a thread of it: no warning
sleep 3 &
bg=$!
"$PMUPROF" record -q -e cpu-clock --duration 0.2 -o "$T/d.pb.gz" -p $bg 2>"$T/d.err"
"$PMUPROF" record -q -e cpu-clock --duration 0.2 -o "$T/e.pb.gz" -t $bg 2>>"$T/d.err"
kill $bg 2>/dev/null
wait $bg 2>/dev/null
if ! grep -q 'warning' "$T/d.err"; then pass unrelated-quiet; else fail unrelated-quiet "$(tr '\n' '|' <"$T/d.err")"; fi
