#!/bin/sh
# record basics: CMD's exit status becomes pmuprof's (128+n for a signal), the
# summary line, -q, the default output name, CMD's stdin/stdout/args/env pass
# through, CMD without "--", and an existing output replaced only at the end.
. "$(dirname "$0")/lib.sh"
need_perf

out=$T/out.pb.gz
rec() { "$PMUPROF" record -e cpu-clock -o "$out" "$@"; }

# status NAME WANT CMD...
status() {
	n=$1 want=$2
	shift 2
	rm -f "$out"
	rec -- "$@" >/dev/null 2>"$T/s.err"
	rc=$?
	if [ $rc -ne "$want" ]; then
		fail "$n" "exit $rc, expected $want: $(head -2 "$T/s.err" | tr '\n' '|')"
	elif ! "$PMUPROF" report -i "$out" >/dev/null 2>"$T/r.err"; then
		fail "$n" "profile not readable: $(head -1 "$T/r.err")"
	else
		pass "$n"
	fi
}
status exit-0 0 /bin/true
status exit-1 1 /bin/false
status exit-3 3 sh -c 'exit 3'
status exit-255 255 sh -c 'exit 255'
status sig-term 143 sh -c 'kill -TERM $$'
status sig-kill 137 sh -c 'kill -KILL $$'
status sig-segv 139 sh -c 'kill -SEGV $$'
status sig-int 130 sh -c 'kill -INT $$'

# summary line
rec -- sh -c 'exit 0' >/dev/null 2>"$T/s.err"
if [ "$(wc -l <"$T/s.err")" -eq 1 ] &&
	grep -Eq "^pmuprof: wrote $out: [0-9]+ samples \([0-9]+ lost\), [0-9]+(\.[0-9]+)? s$" "$T/s.err"; then
	pass summary-line
else
	fail summary-line "$(head -3 "$T/s.err" | tr '\n' '|')"
fi
rec -q -- sh -c 'exit 0' >"$T/q.out" 2>"$T/q.err"
if [ $? -eq 0 ] && [ ! -s "$T/q.err" ] && [ ! -s "$T/q.out" ] && [ -s "$out" ]; then
	pass quiet
else
	fail quiet "stderr: $(head -1 "$T/q.err")"
fi

# cpu_of FILE: user + system seconds of CPU in FILE, the output of the shell
# builtin `times` (the shell's own and its children's, summed): an event
# without :u/:k counts the kernel's time too, as Go's profiler does.
cpu_of() { awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+m[0-9.]+s$/) { split($i, a, "m"); t += 60 * a[1] + a[2] } }
	END { printf "%.3f\n", t }' "$1"; }

# a busy CMD gets F samples per second of the CPU time it reports itself
# (`times`, in the same run), not per wall second: on a loaded machine it gets
# less CPU than wall time.  cpu-clock samples every 1/F s of the task's CPU
# time, so the count is F * CPU up to: times(2)'s 10 ms truncation of each of
# its 4 fields (truth up to 40 ms above), a partial period, and 10 % for
# steal time in a VM.
rec -F 1000 -- sh -c 'i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done; times' >"$T/b.out" 2>"$T/b.err"
n=$(sample_count "$T/b.err")
cpu=$(cpu_of "$T/b.out")
if [ -n "$n" ] && awk -v n="$n" -v c="$cpu" 'BEGIN { exit !(c >= 0.2 && n >= 0.9 * 1000 * c - 5 && n <= 1.1 * 1000 * (c + 0.04) + 5) }'; then
	pass busy-sample-rate
else
	fail busy-sample-rate "$n samples at 1000 Hz for $cpu s of CPU (times): $(head -1 "$T/b.err")"
fi
echo "# busy: $n samples for $cpu s of CPU, $(sed -n 's/.*, \([0-9.]*\) s$/\1/p' "$T/b.err") s wall"
"$PMUPROF" report -i "$out" --folded >"$T/b.folded"
if [ "$(folded_total "$T/b.folded")" = "$n" ]; then
	pass folded-total-is-samples
else
	fail folded-total-is-samples "folded total $(folded_total "$T/b.folded"), summary $n"
fi

# default output name, in the current directory
(cd "$T" && "$PMUPROF" record -e cpu-clock -q -- /bin/true)
if [ -s "$T/pmuprof.pb.gz" ] && (cd "$T" && "$PMUPROF" report >/dev/null); then
	pass default-output
else
	fail default-output "no readable $T/pmuprof.pb.gz"
fi

# stdout/stdin/args/env of CMD are its own
o=$(echo data-in | rec -q -- cat)
if [ "$o" = data-in ]; then pass stdin-stdout; else fail stdin-stdout "got '$o'"; fi
o=$(rec -q -- sh -c 'echo "$@"' sh -e -F 5 -- -o x)
if [ "$o" = "-e -F 5 -- -o x" ]; then pass args-after-cmd; else fail args-after-cmd "got '$o'"; fi
o=$(PMUPROF_E2E_VAR=hello rec -q -- sh -c 'echo "$PMUPROF_E2E_VAR"')
if [ "$o" = hello ]; then pass env; else fail env "got '$o'"; fi
o=$(cd "$T" && "$PMUPROF" record -e cpu-clock -q -o "$out" sh -c 'echo "$0 $1"; exit 4' a b)
rc=$?
if [ "$o" = "a b" ] && [ $rc -eq 4 ]; then pass no-dashdash; else fail no-dashdash "rc=$rc out='$o'"; fi
o=$(PATH=/nonexistent:/usr/bin:/bin rec -q -- env true && echo ok)
if [ "$o" = ok ]; then pass path-lookup; else fail path-lookup; fi

# An existing output stays as it was while CMD runs, and is replaced at the end.
printf 'precious\000bytes\n' >"$T/keep"
cp "$T/keep" "$out"
rec -q -- sh -c "cp '$out' '$T/during'"
if cmp -s "$T/keep" "$T/during"; then pass replace-at-end; else fail replace-at-end "output changed while CMD ran"; fi
if ! cmp -s "$T/keep" "$out" && "$PMUPROF" report -i "$out" >/dev/null; then
	pass replaced
else
	fail replaced "output not replaced by a readable profile"
fi
if [ "$(ls -A "$T" | grep -c -e '\.tmp' -e 'pb\.gz\.')" -eq 0 ]; then
	pass no-temp-left
else
	fail no-temp-left "$(ls -A "$T" | tr '\n' ' ')"
fi

# Child processes are followed: the Go program runs under sh (not exec'd).
if [ -x "$GOFIX/shares" ]; then
	# the Go program's samples (stacks through main.burnN) against the CPU time
	# sh reports for its child (`times`, the same run): at 1000 Hz, F * user CPU up
	# to the bounds above and the child's start-up (ms of 0.2 s); not
	# following children gives none
	rec -q -- sh -c "$GOFIX/shares -scale 0.05; times" >"$T/c.out"
	"$PMUPROF" report -i "$out" --folded >"$T/c.folded"
	# user time only: main.burnN is user code (the child's system time is
	# its runtime's start-up, under other frames)
	cc=$(sed -n 2p "$T/c.out" | awk '{ print $1 }' >"$T/c.times"; cpu_of "$T/c.times")
	nb=$(awk '/main\.burn[1-4]/ { t += $NF } END { print t + 0 }' "$T/c.folded")
	s=$(share "$T/c.folded" main.burn4)
	if awk -v n="$nb" -v c="$cc" -v s="$s" 'BEGIN { exit !(c >= 0.05 && s > 0 && n >= 0.8 * 1000 * c - 20) }'; then
		pass follows-children
	else
		fail follows-children "$nb samples in main.burnN (burn4 $s %) for $cc s of CPU in the child of sh"
	fi
else
	skip follows-children "fixture missing: $GOFIX/shares"
fi
