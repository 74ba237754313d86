#!/bin/sh
# record usage errors: each exits 2 with one "pmuprof: " line on stderr,
# nothing on stdout, never runs CMD, creates no output file and leaves an
# existing one byte-for-byte intact.
. "$(dirname "$0")/lib.sh"

out=$T/out.pb.gz
ran=$T/ran
# usage NAME REGEX ARGS... (record options; CMD appended unless ARGS has --)
usage() {
	n=$1 re=$2
	shift 2
	rm -f "$out" "$ran"
	expect_fail "$n" 2 "$re" "$PMUPROF" record -o "$out" "$@"
	if [ -e "$out" ]; then fail "$n-no-output" "$out was created"; else pass "$n-no-output"; fi
	if [ -e "$ran" ]; then fail "$n-not-run" "CMD ran"; else pass "$n-not-run"; fi
}

usage unknown-event "^pmuprof: unknown event 'cyclez' \(did you mean 'cycles'\?\)$" -e cyclez -- sh -c "touch $ran"
usage unknown-event-junk "^pmuprof: unknown event 'no-such-event'" -e no-such-event -- sh -c "touch $ran"
usage empty-event "^pmuprof: .*event" -e '' -- sh -c "touch $ran"
usage freq-0 "^pmuprof: invalid frequency '0'" -F 0 -- sh -c "touch $ran"
usage freq-neg "^pmuprof: invalid frequency '-1'" -F -1 -- sh -c "touch $ran"
usage freq-huge "^pmuprof: invalid frequency '99999999'" -F 99999999 -- sh -c "touch $ran"
usage freq-1e9 "^pmuprof: invalid frequency '1e9'" -F 1e9 -- sh -c "touch $ran"
usage freq-abc "^pmuprof: invalid frequency 'abc'" -F abc -- sh -c "touch $ran"
usage count-0 "^pmuprof: invalid period '0'" -c 0 -- sh -c "touch $ran"
usage count-neg "^pmuprof: invalid period '-5'" -c -5 -- sh -c "touch $ran"
usage count-abc "^pmuprof: invalid period 'abc'" -c abc -- sh -c "touch $ran"
usage count-huge "^pmuprof: invalid period" -c 4611686018427387905 -- sh -c "touch $ran"
usage freq-and-count "^pmuprof: .*-F.*-c|^pmuprof: .*-c.*-F" -F 100 -c 1000 -- sh -c "touch $ran"
usage no-cmd "^pmuprof: .*no command"
usage no-cmd-dashdash "^pmuprof: .*no command" --
usage unknown-option "^pmuprof: .*unknown option" --frobnicate -- sh -c "touch $ran"
usage duration-0 "^pmuprof: invalid duration '0'" --duration 0 -- sh -c "touch $ran"
usage duration-neg "^pmuprof: invalid duration" --duration -1 -- sh -c "touch $ran"
usage duration-abc "^pmuprof: invalid duration 'abc'" --duration abc -- sh -c "touch $ran"
usage stack-odd "^pmuprof: invalid stack size '100'" --stack-size 100 -- sh -c "touch $ran"
usage stack-huge "^pmuprof: invalid stack size '65536'" --stack-size 65536 -- sh -c "touch $ran"

# The -F limit is kernel.perf_event_max_sample_rate: the maximum itself is fine
# as a value (it is not a usage error), one above is.
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null)
if [ -n "$max" ]; then
	usage freq-above-max "^pmuprof: invalid frequency '$((max + 1))': must be 1\.\.$max" -F $((max + 1)) -- sh -c "touch $ran"
fi

# Pre-existing output file: untouched by a usage error.
printf 'precious\000bytes\n' >"$T/keep"
cp "$T/keep" "$out"
expect_fail keep-existing 2 "^pmuprof: invalid frequency" "$PMUPROF" record -F 0 -o "$out" -- true
if cmp -s "$T/keep" "$out"; then pass keep-existing-intact; else fail keep-existing-intact; fi
# no temporary files left next to it
if [ "$(ls -A "$T" | grep -v -e '^keep$' -e '^out.pb.gz$' -e '^ef\.' -e '^check.out$' | wc -l)" -eq 0 ]; then
	pass no-temp-left
else
	fail no-temp-left "$(ls -A "$T" | tr '\n' ' ')"
fi
