#!/bin/sh
# Faults: a full disk.  pmuprof records into a 64 KiB tmpfs (mounted by this
# test, unmounted at exit) that is full by the time the profile is written:
# one clear error line naming the file and ENOSPC, exit 1, nothing
# half-written in the directory (no temp file), and the previous profile at
# the output path still intact.  The recording is not lost: it is saved to
# $TMPDIR/pmuprof-PID.pb.gz and the error line says where.  Needs root for
# mount; skipped otherwise.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

D=$T/disk
mkdir -p "$D"
if ! mount -t tmpfs -o size=64k tmpfs "$D" 2>"$T/mount.err"; then
	skip all "cannot mount a tmpfs: $(head -1 "$T/mount.err")"
	exit 0
fi
trap 'umount "$D" 2>/dev/null; rm -rf "$T"' EXIT

out=$D/prof.pb.gz
printf 'previous profile\n' >"$out"
cp "$out" "$T/prev"
# fill the rest of the file system
cat /dev/zero >"$D/fill" 2>/dev/null
if [ "$(df -k "$D" | awk 'NR == 2 { print $4 }')" != 0 ]; then
	fail fill "could not fill the tmpfs: $(df -k "$D" | tail -1)"
fi

mkdir -p "$T/tmp"
TMPDIR=$T/tmp expect_fail enospc-error 1 "^pmuprof: cannot write '$out': [Nn]o space left on device; the profile was saved to '$T/tmp/pmuprof-[0-9]+\.pb\.gz'$" \
	"$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode busy -n 1 -secs 1 -cpu "$T/cpu"
saved=$(sed -n "s/.*the profile was saved to '\(.*\)'$/\1/p" "$T/ef.err")
# the whole recording: about a sample a ms of the CPU time the fixture
# measured for itself (1 kHz; 0.75x..1.5x: a loaded VM's late timer, stolen time)
cpu=$(sed -n 's/^cpu //p' "$T/cpu" 2>/dev/null)
: >"$T/f"
[ -n "$saved" ] && "$PMUPROF" report -i "$saved" --folded >"$T/f" 2>/dev/null
got=$(folded_total "$T/f")
echo "# rescued: $got samples, the fixture used ${cpu:-?} s of CPU"
if [ -n "$saved" ] && awk -v n="$got" -v c="${cpu:-0}" 'BEGIN { e = 1000 * c; exit !(c > 0 && n >= 0.75 * e && n <= 1.5 * e + 10) }'; then
	pass enospc-rescued
else
	fail enospc-rescued "saved '$saved': $got samples for ${cpu:-?} s of CPU"
fi
if cmp -s "$out" "$T/prev"; then pass enospc-previous-intact; else fail enospc-previous-intact; fi
left=$(ls -A "$D" | grep -v '^prof.pb.gz$' | grep -v '^fill$')
if [ -z "$left" ]; then pass enospc-no-temp; else fail enospc-no-temp "left: $left"; fi

# no previous file: still nothing at the path afterwards
rm -f "$out"
cat /dev/zero >>"$D/fill" 2>/dev/null
TMPDIR=$T/tmp expect_fail enospc-new-error 1 "[Nn]o space left on device; the profile was saved" \
	"$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode busy -n 1 -secs 0.5
left=$(ls -A "$D" | grep -v '^fill$')
if [ -z "$left" ]; then pass enospc-new-nothing; else fail enospc-new-nothing "left: $left"; fi

# room again: the same command works (the error was the disk, not pmuprof)
rm -f "$D/fill"
if "$PMUPROF" record -e cpu-clock -q -o "$out" -- "$F" -mode busy -n 1 -secs 0.5 &&
	"$PMUPROF" report -i "$out" >/dev/null; then
	pass room-again
else
	fail room-again
fi
