#!/bin/sh
# --creators attached where tracefs is not mounted: the creation probe
# cannot be defined (it lives in tracefs), said in one warning line that
# says what is read instead and what that risks, and the recording goes on.
. "$(dirname "$0")/lib.sh"
need_perf
need_file creators "$GOFIX/creators"
if grep -q ' tracefs ' /proc/mounts; then
	skip one-warning "tracefs is mounted here (the case needs it unmounted; not changed by a test)"
	exit 0
fi
"$GOFIX/creators" -duration 10s >/dev/null 2>&1 &
bg=$!
sleep 0.3
"$PMUPROF" record -q -e cpu-clock --creators --duration 0.5 -o "$T/c.pb.gz" -p $bg 2>"$T/c.err"
rc=$?
kill $bg 2>/dev/null
wait $bg 2>/dev/null
if [ $rc -eq 0 ] && [ "$(wc -l <"$T/c.err")" -eq 1 ] &&
	grep -q '^pmuprof: warning: creators: cannot watch goroutines being created in .* (tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)); goroutine ids, labels and creators are read from the process, and may be those of a goroutine that ran later$' "$T/c.err"; then
	pass one-warning
else
	fail one-warning "exit $rc: $(tr '\n' '|' <"$T/c.err")"
fi
if "$PMUPROF" report -i "$T/c.pb.gz" --folded 2>/dev/null | grep -q 'main\.work'; then pass still-recorded; else fail still-recorded; fi
