#!/bin/sh
# --creators attached where tracefs is not mounted (this machine's default):
# pmuprof (root) mounts it for itself, in a mount namespace of its own, so the
# creation probe is defined as usual: no warning, creations seen, and nothing
# left mounted; a command it starts runs in the caller's mount namespace
# and working directory.
# Where it cannot have tracefs ($PMUPROF_TRACEFS naming a root without one):
# one warning line that says what is read instead and what that risks, and
# the recording goes on.
. "$(dirname "$0")/lib.sh"
need_perf
need_file creators "$GOFIX/creators"
need_cmd unshare unshare

# a mount namespace of the test's own where tracefs is not mounted (private:
# the machine's mounts are not touched)
cat >"$T/case.sh" <<'EOS'
umount /sys/kernel/tracing 2>/dev/null
umount /sys/kernel/debug/tracing 2>/dev/null
grep -c ' tracefs ' /proc/mounts >"$T/before"
"$GOFIX/creators" -unit 6000000 -duration 6s >/dev/null 2>&1 &
bg=$!
sleep 0.3
"$PMUPROF" record -q -e cpu-clock --creators --duration 1 -o "$T/m.pb.gz" -p $bg 2>"$T/m.err"
echo $? >"$T/m.rc"
kill $bg 2>/dev/null
wait $bg 2>/dev/null
grep -c ' tracefs ' /proc/mounts >"$T/after"
readlink /proc/self/ns/mnt >"$T/ns.self"
"$PMUPROF" record -q -e cpu-clock --creators -o "$T/n.pb.gz" -- readlink /proc/self/ns/mnt >"$T/ns.cmd" 2>"$T/n.err"
mkdir -p "$T/wd" && cd "$T/wd" && "$PMUPROF" record -q -e cpu-clock -o "$T/w.pb.gz" -- pwd >"$T/wd.cmd" 2>"$T/w.err"
EOS
env T="$T" GOFIX="$GOFIX" PMUPROF="$PMUPROF" unshare -m sh "$T/case.sh"
seen=$(gotool tool pprof -raw "$T/m.pb.gz" 2>/dev/null | sed -n 's/.*creators: \([0-9]*\) goroutine creations seen by the probe.*/\1/p')
if [ "$(cat "$T/before")" = 0 ] && [ "$(cat "$T/m.rc")" = 0 ] && [ ! -s "$T/m.err" ] && [ "${seen:-0}" -gt 0 ]; then
	pass mounts-for-itself
else
	fail mounts-for-itself "tracefs mounts before: $(cat "$T/before"); exit $(cat "$T/m.rc"); ${seen:-no} creations seen; $(head -2 "$T/m.err" | tr '\n' '|')"
fi
if [ "$(cat "$T/after")" = 0 ]; then pass nothing-left-mounted; else fail nothing-left-mounted "$(cat "$T/after") tracefs mounts after"; fi
if [ -s "$T/ns.self" ] && cmp -s "$T/ns.self" "$T/ns.cmd"; then pass command-in-callers-namespace; else fail command-in-callers-namespace "caller $(cat "$T/ns.self"), command $(cat "$T/ns.cmd"); $(head -1 "$T/n.err")"; fi
# (setns resets the working directory: the command's is the caller's)
if [ "$(cat "$T/wd.cmd")" = "$T/wd" ]; then pass command-in-callers-directory; else fail command-in-callers-directory "ran in '$(cat "$T/wd.cmd")', not $T/wd: $(head -1 "$T/w.err")"; fi
if "$PMUPROF" report -i "$T/m.pb.gz" --folded 2>/dev/null | grep -q 'main\.work'; then pass recorded; else fail recorded; fi

# no tracefs to be had: one warning, the recording goes on
"$GOFIX/creators" -duration 10s >/dev/null 2>&1 &
bg=$!
sleep 0.3
PMUPROF_TRACEFS=$T/none "$PMUPROF" record -q -e cpu-clock --creators --duration 0.5 -o "$T/c.pb.gz" -p $bg 2>"$T/c.err"
rc=$?
kill $bg 2>/dev/null
wait $bg 2>/dev/null
# (an honest "lost N samples" warning under load is not the one checked here)
if [ $rc -eq 0 ] && [ "$(grep -vc '^pmuprof: warning: lost [0-9]* samples' "$T/c.err")" -eq 1 ] &&
	grep -q '^pmuprof: warning: creators: cannot watch goroutines being created in .* (tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)); goroutine ids, labels and creators are read from the process, and may be those of a goroutine that ran later$' "$T/c.err"; then
	pass one-warning
else
	fail one-warning "exit $rc: $(tr '\n' '|' <"$T/c.err")"
fi
if "$PMUPROF" report -i "$T/c.pb.gz" --folded 2>/dev/null | grep -q 'main\.work'; then pass still-recorded; else fail still-recorded; fi
