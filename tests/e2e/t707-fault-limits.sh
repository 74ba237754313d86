#!/bin/sh
# Limits: memory stays bounded whatever the target's stacks look like, and
# the user is told once when a limit is reached; no sample is dropped.
#  - distinct stacks (PMUPROF_MAX_STACKS, default 262144): a target with
#    thousands of distinct stacks recorded under a cap of 50: one warning,
#    at most 51 stacks in the profile, the rest counted under [limit]
#  - distinct frames (PMUPROF_MAX_FRAMES, default 1048576): the same, cap 12
#  - mappings of code (PMUPROF_MAX_MAPS): past the cap new ones are not
#    kept and their frames are left unnamed, never named after a stale one
#  - frames per stack (1024): a 3000-deep recursion copied in full
#    (--stack-size 65528) is cut at 1024 frames with one warning, rooted at
#    [truncated]
# Bytes read from the target per sample are bounded by the stack copy
# (--stack-size, at most 65528, copied by the kernel) plus, behind a cgo
# call, at most one goroutine-stack read of GSTACK_MAX bytes.
. "$(dirname "$0")/lib.sh"
need_perf
F=$GOFIX/faults
need_file fixture "$F"

out=$T/prof.pb.gz
check_run() { # NAME WARN-REGEX MAXSTACKS
	if [ "$(grep -c "$2" "$T/e")" = 1 ]; then pass "$1-warned-once"; else fail "$1-warned-once" "$(grep -c "$2" "$T/e") matching lines: $(head -3 "$T/e" | tr '\n' '|')"; fi
	if ! "$PMUPROF" report -i "$out" --folded >"$T/f" 2>"$T/f.err"; then
		fail "$1-readable" "$(head -1 "$T/f.err")"
		return
	fi
	pass "$1-readable"
	if [ "$(sample_count "$T/e")" = "$(folded_total "$T/f")" ]; then pass "$1-nothing-dropped"; else fail "$1-nothing-dropped" "summary $(sample_count "$T/e"), profile $(folded_total "$T/f")"; fi
	if [ -n "$3" ]; then
		# the pprof holds one sample per (stack, thread); folded merges threads
		ns=$(wc -l <"$T/f")
		if [ "$ns" -le "$3" ]; then pass "$1-bounded"; else fail "$1-bounded" "$ns distinct stacks, cap $3"; fi
	fi
}

PMUPROF_MAX_STACKS=50 "$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode stacks -secs 1.5 2>"$T/e"
check_run stacks 'warning: reached the limit of 50 distinct stacks' 51
if grep -q '^\[limit\] [0-9]' "$T/f"; then pass stacks-marker; else fail stacks-marker "no [limit] stack"; fi

PMUPROF_MAX_FRAMES=12 "$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode stacks -secs 1.5 2>"$T/e"
check_run frames 'warning: reached the limit of 12 distinct frames' ''
if grep -q '\[limit\]' "$T/f"; then pass frames-marker; else fail frames-marker "no [limit] frame"; fi

# mappings (PMUPROF_MAX_MAPS, default 1048576, and 262144 at once in a
# process): the fixture maps fresh code hundreds of times; past a cap of 20
# the new mappings are not kept and their frames stay unnamed (an address),
# never named from the stale binary that was mapped there before
PMUPROF_MAX_MAPS=20 "$PMUPROF" record -e cpu-clock -o "$out" -- "$F" -mode remap -secs 1.5 >"$T/o" 2>"$T/e"
check_run maps 'warning: reached the limit on mappings of code (20 in all' ''
named=$(awk '/;main\.remap;code[01]\.bin\+/ { n += $NF } END { print n + 0 }' "$T/f")
unnamed=$(awk '/;main\.remap;0x[0-9a-f]+ [0-9]+$/ { n += $NF } END { print n + 0 }' "$T/f")
if [ "$unnamed" -gt 0 ] && [ "$unnamed" -gt "$named" ]; then
	pass maps-unnamed
else
	fail maps-unnamed "in fresh code: $unnamed samples unnamed, $named named ($(sed -n 's/^remaps //p' "$T/o") remaps)"
fi

"$PMUPROF" record -e cpu-clock --stack-size 65528 -o "$out" -- "$F" -mode deep -secs 1.5 2>"$T/e"
check_run depth 'warning: a stack deeper than 1024 frames was cut' ''
d=$(awk '{ n = split($0, a, ";"); if (n > m) m = n } END { print m + 0 }' "$T/f")
if [ "$d" -ge 1000 ] && [ "$d" -le 1040 ] && grep -q '^\[truncated\];main\.deep' "$T/f"; then
	pass depth-cut
else
	fail depth-cut "deepest folded stack $d frames"
fi
