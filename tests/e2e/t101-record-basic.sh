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

# a busy CMD gets about F samples per CPU second
rec -F 1000 -- sh -c 'i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done' 2>"$T/b.err"
n=$(sample_count "$T/b.err")
t=$(sed -n 's/.*, \([0-9.]*\) s$/\1/p' "$T/b.err")
if [ -n "$n" ] && [ -n "$t" ] && awk -v n="$n" -v t="$t" 'BEGIN { exit !(t > 0.2 && n >= 600 * t && n <= 1300 * t) }'; then
	pass busy-sample-rate
else
	fail busy-sample-rate "$n samples in $t s at 1000 Hz: $(head -1 "$T/b.err")"
fi
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
	rec -q -- sh -c "$GOFIX/shares -scale 0.05; true"
	"$PMUPROF" report -i "$out" --folded >"$T/c.folded"
	s=$(share "$T/c.folded" main.burn4)
	if awk -v s="$s" 'BEGIN { exit !(s >= 20) }'; then
		pass follows-children
	else
		fail follows-children "main.burn4 self $s % in a child of sh"
	fi
else
	skip follows-children "fixture missing: $GOFIX/shares"
fi
