#!/bin/sh
# record errors after parsing: CMD not found (127), not executable (126),
# unwritable output (1, CMD not run), refused perf_event_open (1).  Each: one
# "pmuprof: " line, nothing on stdout, no output file, an existing one intact.
. "$(dirname "$0")/lib.sh"

out=$T/out.pb.gz
ran=$T/ran
printf 'precious\000bytes\n' >"$T/keep"

# after NAME: the checks that follow every failing record
after() {
	if [ -e "$ran" ]; then fail "$1-not-run" "CMD ran"; else pass "$1-not-run"; fi
	if [ -e "$out" ]; then fail "$1-no-output" "$out was created"; else pass "$1-no-output"; fi
	if ls -A "$T" | grep -q -e 'pb\.gz\.' -e '\.tmp'; then
		fail "$1-no-temp" "$(ls -A "$T" | tr '\n' ' ')"
	else
		pass "$1-no-temp"
	fi
	rm -f "$ran" "$out"
}

# perf_event_open refused (simulated): works on any machine.
for e in EACCES EPERM ENOENT EMFILE; do
	PMUPROF_FAIL_OPEN=$e expect_fail "open-$e" 1 '^pmuprof: ' \
		"$PMUPROF" record -e cpu-clock -o "$out" -- sh -c "touch $ran"
	after "open-$e"
done
cp "$T/keep" "$out"
PMUPROF_FAIL_OPEN=EACCES expect_fail open-keep 1 '^pmuprof: ' \
	"$PMUPROF" record -e cpu-clock -o "$out" -- sh -c "touch $ran"
if cmp -s "$T/keep" "$out"; then pass open-keep-intact; else fail open-keep-intact; fi
rm -f "$out"
# EACCES must explain the privilege problem (paranoid level or capability)
PMUPROF_FAIL_OPEN=EACCES "$PMUPROF" record -e cpu-clock -o "$out" -- true 2>"$T/e.err"
if grep -Eqi 'paranoid|CAP_PERFMON|permission|root' "$T/e.err"; then
	pass open-eacces-explains
else
	fail open-eacces-explains "$(head -1 "$T/e.err")"
fi
rm -f "$out"

need_perf

expect_fail not-found 127 "^pmuprof: cannot run 'nosuchcmd-pmuprof': command not found$" \
	"$PMUPROF" record -e cpu-clock -o "$out" -- nosuchcmd-pmuprof
after not-found
expect_fail not-found-path 127 "^pmuprof: cannot run '$T/nope': " \
	"$PMUPROF" record -e cpu-clock -o "$out" -- "$T/nope"
after not-found-path
cp "$T/keep" "$out"
expect_fail not-found-keep 127 "command not found" \
	"$PMUPROF" record -e cpu-clock -o "$out" -- nosuchcmd-pmuprof
if cmp -s "$T/keep" "$out"; then pass not-found-keep-intact; else fail not-found-keep-intact; fi
rm -f "$out"

printf '#!/bin/sh\ntouch %s\n' "$ran" >"$T/x"
chmod 644 "$T/x"
(cd "$T" && expect_fail not-executable 126 "^pmuprof: cannot run './x': Permission denied$" \
	"$PMUPROF" record -e cpu-clock -o "$out" -- ./x)
after not-executable
mkdir "$T/dir"
expect_fail cmd-is-dir 126 "^pmuprof: cannot run '$T/dir': " \
	"$PMUPROF" record -e cpu-clock -o "$out" -- "$T/dir"
after cmd-is-dir

expect_fail out-nodir 1 "^pmuprof: cannot write '/nonexistent/x.pb.gz': No such file or directory$" \
	"$PMUPROF" record -e cpu-clock -o /nonexistent/x.pb.gz -- sh -c "touch $ran"
after out-nodir
expect_fail out-isdir 1 "^pmuprof: cannot write '$T/dir': " \
	"$PMUPROF" record -e cpu-clock -o "$T/dir" -- sh -c "touch $ran"
after out-isdir
expect_fail out-under-file 1 "^pmuprof: cannot write '$T/keep/x.pb.gz': Not a directory$" \
	"$PMUPROF" record -e cpu-clock -o "$T/keep/x.pb.gz" -- sh -c "touch $ran"
after out-under-file
