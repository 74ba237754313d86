#!/bin/sh
# Bad input for record -p/-t: each is one "pmuprof: " line on stderr, nothing
# on stdout, exit 2 for usage and 1 otherwise, and no output file (an
# existing one is left as it was).
. "$(dirname "$0")/lib.sh"

out=$T/out.pb.gz
# expect_fail plus: the output file was not created
bad() {
	_name=$1
	rm -f "$out"
	expect_fail "$@"
	if [ -e "$out" ]; then fail "$_name-no-file" "$out was created"; fi
}

# usage (exit 2)
bad p-garbage 2 "^pmuprof: invalid PID 'abc'" "$PMUPROF" record -o "$out" -p abc
bad p-trailing-junk 2 "^pmuprof: invalid PID '12x'" "$PMUPROF" record -o "$out" -p 12x
bad p-zero 2 "^pmuprof: invalid PID '0'" "$PMUPROF" record -o "$out" -p 0
bad p-negative 2 "^pmuprof: invalid PID" "$PMUPROF" record -o "$out" -p -5
bad p-empty-item 2 "^pmuprof: invalid PID '1,,2'" "$PMUPROF" record -o "$out" -p 1,,2
bad p-huge 2 "^pmuprof: invalid PID" "$PMUPROF" record -o "$out" -p 99999999999
bad t-garbage 2 "^pmuprof: invalid TID 'x'" "$PMUPROF" record -o "$out" -t x
bad p-with-command 2 "^pmuprof: -p and a command are exclusive" "$PMUPROF" record -o "$out" -p $$ -- /bin/true
bad t-with-command 2 "^pmuprof: -t and a command are exclusive" "$PMUPROF" record -o "$out" -t $$ /bin/true

# runtime errors (exit 1)
# above kernel.pid_max: no process can have it
nopid=$(($(cat /proc/sys/kernel/pid_max) + 1))
bad no-such-pid 1 "^pmuprof: no process with PID $nopid$" "$PMUPROF" record -o "$out" -p $nopid
bad no-such-tid 1 "^pmuprof: no thread with TID $nopid$" "$PMUPROF" record -o "$out" -t $nopid

kt=""
for p in 2 $(ls /proc | grep -E '^[0-9]+$' | head -50); do
	if [ -r /proc/$p/stat ] && awk '{ sub(/^.*\) /, ""); exit !(int($7 / 2097152) % 2 == 1) }' /proc/$p/stat 2>/dev/null; then
		kt=$p
		break
	fi
done
if [ -n "$kt" ]; then
	bad kernel-thread 1 "^pmuprof: PID $kt \(.*\) is a kernel thread" "$PMUPROF" record -o "$out" -p $kt
else
	skip kernel-thread "no kernel thread visible in this pid namespace"
fi

# a live target for the rest
sleep 30 &
sp=$!
bad t-not-in-p 1 "^pmuprof: thread $$ is not in process $sp" "$PMUPROF" record -o "$out" -p $sp -t $$

# the pid of a non-main thread given to -p
if [ -x "$GOFIX/attach" ]; then
	"$GOFIX/attach" >"$T/fix.out" 2>&1 &
	fp=$!
	i=0
	while ! grep -q '^ready' "$T/fix.out" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	th=$(ls /proc/$fp/task | grep -vx $fp | head -1)
	bad p-is-a-thread 1 "^pmuprof: PID $th is a thread of process $fp" "$PMUPROF" record -o "$out" -p $th
	kill $fp
	wait $fp 2>/dev/null
fi

# permission refused (injected): the line names the cause and the remedy; an existing file stays
echo keep >"$out"
PMUPROF_FAIL_OPEN=EACCES expect_fail eacces 1 "^pmuprof: cannot attach to PID $sp \(sleep\): .*permission denied \(kernel\.perf_event_paranoid=-?[0-9]+\).*CAP_PERFMON" \
	"$PMUPROF" record -e cpu-clock -o "$out" -p $sp
if [ "$(cat "$out")" = keep ]; then pass eacces-file-intact; else fail eacces-file-intact; fi
rm -f "$out"
PMUPROF_FAIL_OPEN=EPERM expect_fail eperm 1 "^pmuprof: cannot attach to PID $sp .*(seccomp|CAP_PERFMON)" \
	"$PMUPROF" record -e cpu-clock -o "$out" -p $sp
[ -e "$out" ] && fail eperm-no-file
kill $sp
wait $sp 2>/dev/null

# the target exits between the checks and the attach (test hook widens the
# window): killed once pmuprof sleeps in it (clock_nanosleep, syscall 230 in
# /proc/PID/syscall), not after a fixed time that a loaded machine may
# take to get pmuprof through its checks
pm=$(readlink -f "$PMUPROF")
sleep 30 &
sp=$!
(
	i=0
	while [ $i -lt 400 ]; do
		for c in $(pgrep -P $$); do
			if [ "$(readlink /proc/$c/exe 2>/dev/null)" = "$pm" ] && grep -q '^230 ' /proc/$c/syscall 2>/dev/null; then
				kill $sp
				exit 0
			fi
		done
		sleep 0.05
		i=$((i + 1))
	done
	kill $sp
) &
killer=$!
PMUPROF_TEST_ATTACH_DELAY=2 bad exits-before-attach 1 "^pmuprof: PID $sp \(sleep\) exited before pmuprof could attach" \
	"$PMUPROF" record -e cpu-clock -o "$out" -p $sp
wait $killer 2>/dev/null
wait $sp 2>/dev/null
# a zombie (exited, not reaped) is not a process to attach to
sh -c 'sleep 0.2 & exec sleep 5' &
zp=$!
# until the child is a zombie (0.2 s unloaded), not a fixed wait
i=0
while [ $i -lt 80 ]; do
	z=$(pgrep -P $zp | head -1)
	[ -n "$z" ] && grep -q ') Z' /proc/$z/stat 2>/dev/null && break
	sleep 0.05
	i=$((i + 1))
done
if [ -n "$z" ] && grep -q ') Z' /proc/$z/stat 2>/dev/null; then
	bad zombie 1 "^pmuprof: PID $z \(sleep\) has exited" "$PMUPROF" record -o "$out" -p $z
else
	skip zombie "no zombie made"
fi
kill $zp 2>/dev/null
wait $zp 2>/dev/null
exit 0
