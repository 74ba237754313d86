#!/bin/sh
# Privilege: under sudo (SUDO_UID/SUDO_GID set, pmuprof root) the command
# runs as the invoking user -- uid, gid, groups, no capabilities -- and is
# still profiled; the profile and the --raw capture belong to that user
# where they may write the directory (a sticky /tmp-like one, their own),
# stay root's where only root may write, also when attached (-p);
# --no-drop-privileges keeps root for both; bad SUDO_* values are a clear
# error.  Needs root (skipped otherwise).
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"
if [ "$(id -u)" != 0 ]; then
	skip all "not root"
	exit 0
fi
out=$T/prof.pb.gz
as_nobody() { SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody "$PMUPROF" record -e cpu-clock -q -o "$out" "$@"; }

got=$(as_nobody -- sh -c 'echo $(id -u) $(id -g) $(id -G)')
if [ "$got" = "65534 65534 65534" ]; then pass dropped; else fail dropped "uid gid groups: '$got'"; fi
got=$(as_nobody -- sh -c 'sed -n "s/^CapEff:[[:space:]]*//p" /proc/self/status')
if [ "$got" = 0000000000000000 ]; then pass no-capabilities; else fail no-capabilities "CapEff $got"; fi
got=$(SUDO_UID=65534 SUDO_GID=65534 "$PMUPROF" record --no-drop-privileges -e cpu-clock -q -o "$out" -- id -u)
if [ "$got" = 0 ]; then pass no-drop-option; else fail no-drop-option "uid '$got'"; fi
got=$(env -u SUDO_UID -u SUDO_GID "$PMUPROF" record -e cpu-clock -q -o "$out" -- id -u)
if [ "$got" = 0 ]; then pass no-sudo; else fail no-sudo "uid '$got'"; fi
got=$(SUDO_UID=0 SUDO_GID=0 "$PMUPROF" record -e cpu-clock -q -o "$out" -- id -u)
if [ "$got" = 0 ]; then pass sudo-from-root; else fail sudo-from-root "uid '$got'"; fi

# still profiled after the drop (the events were opened before it).  The
# user must reach the program: the checkout may sit in a directory only root
# can enter (a private mktemp -d), so a copy in the scratch directory, opened
# to others (/tmp is).
chmod 755 "$T"
cp "$F" "$T/faults"
if ! su -s /bin/sh nobody -c "test -x '$T/faults'" 2>/dev/null; then
	skip profiled "user nobody cannot reach $T/faults (a parent directory closed to others)"
else
# (the fixture writes the CPU time it used where the user may write)
mkdir -p "$T/cpu-out"
chmod 1777 "$T/cpu-out"
as_nobody -- "$T/faults" -mode busy -n 1 -secs 1 -cpu "$T/cpu-out/cpu"
rc=$?
cpu=$(sed -n 's/^cpu //p' "$T/cpu-out/cpu" 2>/dev/null)
# about a sample a ms of the CPU time the fixture measured (1 kHz;
# 0.75x..1.5x: a loaded VM's late timer, stolen time), nearly all in main.spin
if [ $rc -eq 0 ] && "$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null &&
	awk -v n="$(folded_total "$T/f")" -v c="${cpu:-0}" 'BEGIN { e = 1000 * c; exit !(c > 0 && n >= 0.75 * e && n <= 1.5 * e + 10) }' &&
	awk -v s="$(share "$T/f" main.spin)" 'BEGIN { exit !(s >= 80) }'; then
	pass profiled
else
	fail profiled "exit $rc, $(folded_total "$T/f" 2>/dev/null) samples for ${cpu:-?} s of CPU, main.spin $(share "$T/f" main.spin 2>/dev/null) %"
fi
fi
# a command only root may run is not run with root's rights
printf '#!/bin/sh\necho ran\n' >"$T/rootonly"
chmod 700 "$T/rootonly"
expect_fail root-only 126 "cannot run|[Pp]ermission denied" \
	env SUDO_UID=65534 SUDO_GID=65534 "$PMUPROF" record -e cpu-clock -q -o "$out" -- "$T/rootonly"

expect_fail bad-sudo-uid 1 "SUDO_UID.*not valid" \
	env SUDO_UID=abc SUDO_GID=65534 "$PMUPROF" record -e cpu-clock -q -o "$out" -- true
expect_fail bad-sudo-gid 1 "SUDO_UID.*not valid" \
	env -u SUDO_GID SUDO_UID=65534 "$PMUPROF" record -e cpu-clock -q -o "$out" -- true

# the files it writes: the user's where they could have written them
owner() { stat -c '%u:%g' "$1" 2>/dev/null; }
mkdir -p "$T/sticky" "$T/rootonly-dir"
chmod 1777 "$T/sticky"
chmod 755 "$T/rootonly-dir"
p=$T/sticky/p.pb.gz r=$T/sticky/c.data
SUDO_UID=65534 SUDO_GID=65534 "$PMUPROF" record -e cpu-clock -q -o "$p" --raw "$r" -- true
if [ "$(owner "$p")" = 65534:65534 ] && [ "$(owner "$r")" = 65534:65534 ]; then
	pass files-owned-by-user
else
	fail files-owned-by-user "profile $(owner "$p"), capture $(owner "$r")"
fi
# ... which that user can then replace and remove (in a sticky dir only the owner can)
if su -s /bin/sh nobody -c "rm -f '$p' '$r'" 2>/dev/null && [ ! -e "$p" ] && [ ! -e "$r" ]; then
	pass user-can-remove
else
	fail user-can-remove "$(ls -l "$T/sticky" | tr '\n' '|')"
fi
SUDO_UID=65534 SUDO_GID=65534 "$PMUPROF" record --no-drop-privileges -e cpu-clock -q -o "$p" --raw "$r" -- true
if [ "$(owner "$p")" = 0:0 ] && [ "$(owner "$r")" = 0:0 ]; then pass files-no-drop-root; else fail files-no-drop-root "profile $(owner "$p"), capture $(owner "$r")"; fi
p2=$T/rootonly-dir/p.pb.gz
SUDO_UID=65534 SUDO_GID=65534 "$PMUPROF" record -e cpu-clock -q -o "$p2" --raw "$p2.data" -- true
if [ "$(owner "$p2")" = 0:0 ] && [ "$(owner "$p2.data")" = 0:0 ]; then
	pass files-root-dir-stay-root
else
	fail files-root-dir-stay-root "profile $(owner "$p2"), capture $(owner "$p2.data")"
fi
# attached: no command to run as the user, the files are still theirs
"$F" -mode busy -n 1 -secs 3 >/dev/null 2>&1 &
bg=$!
sleep 0.3
p3=$T/sticky/attach.pb.gz
SUDO_UID=65534 SUDO_GID=65534 "$PMUPROF" record -e cpu-clock -q -p $bg --duration 0.5 -o "$p3"
kill $bg 2>/dev/null
wait $bg 2>/dev/null
if [ "$(owner "$p3")" = 65534:65534 ]; then pass files-attach-owned-by-user; else fail files-attach-owned-by-user "profile $(owner "$p3")"; fi
