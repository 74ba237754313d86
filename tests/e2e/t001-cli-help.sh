#!/bin/sh
# CLI: --help / help COMMAND / --version / no command / unknown command, and
# every long option in the man pages appears in the matching --help (and back).
. "$(dirname "$0")/lib.sh"

# $1 name, then the command: must exit 0, print usage on stdout, nothing on stderr
help_ok() {
	n=$1
	shift
	"$@" >"$T/h.out" 2>"$T/h.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$n" "exit $rc"
	elif ! grep -q '^usage: pmuprof' "$T/h.out"; then
		fail "$n" "no 'usage: pmuprof' line on stdout: $(head -1 "$T/h.out")"
	elif [ -s "$T/h.err" ]; then
		fail "$n" "stderr not empty: $(head -1 "$T/h.err")"
	else
		pass "$n"
	fi
}

help_ok help "$PMUPROF" --help
help_ok help-short "$PMUPROF" -h
help_ok help-cmd "$PMUPROF" help
help_ok record-help "$PMUPROF" record --help
help_ok record-h "$PMUPROF" record -h
help_ok report-help "$PMUPROF" report --help
help_ok report-h "$PMUPROF" report -h
help_ok agent-help "$PMUPROF" agent --help
# --help wins over a command that is never run
help_ok record-help-no-run "$PMUPROF" record --help -- sh -c "touch $T/ran"
if [ -e "$T/ran" ]; then fail record-help-runs-nothing; else pass record-help-runs-nothing; fi

if "$PMUPROF" --help | grep -q '^  *record ' && "$PMUPROF" --help | grep -q '^  *report '; then
	pass help-lists-commands
else
	fail help-lists-commands "record/report not listed in pmuprof --help"
fi
for c in record report agent; do
	"$PMUPROF" "$c" --help >"$T/a" 2>&1
	"$PMUPROF" help "$c" >"$T/b" 2>&1
	if [ -s "$T/a" ] && cmp -s "$T/a" "$T/b"; then
		pass "help-$c-same"
	else
		fail "help-$c-same" "'pmuprof help $c' differs from 'pmuprof $c --help'"
	fi
done

v=$("$PMUPROF" --version 2>"$T/v.err")
rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$v" | grep -Eq '^pmuprof [0-9]' && [ ! -s "$T/v.err" ]; then
	pass version
else
	fail version "rc=$rc out='$v'"
fi

# No command: usage on stderr, exit 2, nothing on stdout.
"$PMUPROF" >"$T/n.out" 2>"$T/n.err"
rc=$?
if [ $rc -eq 2 ] && grep -q 'usage: pmuprof' "$T/n.err" && [ ! -s "$T/n.out" ]; then
	pass no-command
else
	fail no-command "rc=$rc stdout=$(wc -c <"$T/n.out")B stderr=$(head -1 "$T/n.err")"
fi
expect_fail unknown-command 2 "^pmuprof: .*unknown command 'frobnicate'" "$PMUPROF" frobnicate
expect_fail help-unknown-command 2 "^pmuprof: .*'frobnicate'" "$PMUPROF" help frobnicate
expect_fail record-unknown-option 2 "^pmuprof: .*unknown option.*--bogus" "$PMUPROF" record --bogus -- true
expect_fail report-unknown-option 2 "^pmuprof: .*unknown option.*--bogus" "$PMUPROF" report --bogus
expect_fail record-unknown-short 2 "^pmuprof: .*unknown option.*-Z" "$PMUPROF" record -Z -- true
expect_fail record-missing-value 2 "^pmuprof: .*-o" "$PMUPROF" record -o

# Long options: man page OPTIONS section <-> --help output.
man_opts() { # scd file -> the long options of its OPTIONS section
	awk '/^# /{ sec = $0 } sec == "# OPTIONS" && /^\*-/' "$1" |
		grep -o -- '--[a-z][a-z-]*' | LC_ALL=C sort -u
}
help_opts() { "$@" 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | LC_ALL=C sort -u; }
for pair in "pmuprof.1.scd:" "pmuprof-record.1.scd:record" "pmuprof-report.1.scd:report" \
	"pmuprof-agent.1.scd:agent"; do
	page=${pair%%:*} sub=${pair#*:}
	n="man-vs-help-${sub:-pmuprof}"
	if [ ! -f "$top/man/$page" ]; then
		skip "$n" "man/$page not written yet"
		continue
	fi
	man_opts "$top/man/$page" >"$T/m"
	# shellcheck disable=SC2086
	help_opts "$PMUPROF" $sub --help >"$T/h"
	if [ ! -s "$T/m" ]; then
		fail "$n" "no long options found in man/$page OPTIONS"
	elif cmp -s "$T/m" "$T/h"; then
		pass "$n"
	else
		fail "$n" "only in man: $(comm -23 "$T/m" "$T/h" | tr '\n' ' ')only in --help: $(comm -13 "$T/m" "$T/h" | tr '\n' ' ')"
	fi
done
