#!/bin/sh
# Samples in the scheduler and the vDSO of a program that parks and unparks
# goroutines all the time (channel ping-pong: runtime.mcall on each side;
# the runtime's goready on the system stack reads the clock through the
# vDSO) and calls time.Now in a loop: complete where the runtime's state
# allows.  Bounds a regression breaks: of the samples in the vDSO at most
# 4 % [truncated] (7.8 % and 2.9 % before the vDSO's return joined the
# kernel's callchain, Go 1.19 and 1.26; 0.1 to 2 % after); of those in the vDSO under
# runtime.systemstack (the goroutine moved on by the time the sample is
# read: only the kernel's callchain has it) at most 20 % (90 and 100 %
# before); under runtime.mcall at most 5 % (the scheduler's own stack, which
# Go's tracebacks end at mcall).  And the truth of those stacks: the
# goroutine that calls time.Now does so under 0 to 3 frames of main.nowDeep
# in turn, so a vDSO sample under it is
# main.modePark.func3;(main.nowDeep;)+time.Now;[time.runtimeNow;]time.now
# in at least 97 % (Go 1.19: 58 % before the kernel's callchain was
# preferred to the goroutine stack read after the sample, where another
# call's return address may sit).  Each Go version's build, launched and
# attached.
. "$(dirname "$0")/lib.sh"
need_perf

# counts FOLDED: "VDSO VDSO_CUT SYSVDSO SYSVDSO_CUT MCALL MCALL_CUT TOTAL CUT"
counts() {
	awk '{ n = $NF; t += n; c = $0 ~ /\[truncated\]/; if (c) tc += n
		if ($0 ~ /__vdso|\[vdso\]/) { v += n; if (c) vc += n }
		if ($0 ~ /runtime\.systemstack;.*(__vdso|\[vdso\])/) { s += n; if (c) sc += n }
		if ($0 ~ /(^|;)runtime\.mcall(;| )/) { m += n; if (c) mc += n } }
		END { print v + 0, vc + 0, s + 0, sc + 0, m + 0, mc + 0, t + 0, tc + 0 }' "$1"
}
# check NAME FOLDED
judge() {
	jf=$2
	set -- "$1" $(counts "$2")
	echo "# $1: $8 samples, $9 [truncated]; vDSO $3 cut of $2; vDSO under systemstack $5 cut of $4; mcall $7 cut of $6"
	why=
	[ "$2" -ge 20 ] || why="$why only $2 samples in the vDSO;"
	awk -v a="$3" -v b="$2" 'BEGIN { exit !(a <= 0.04 * b) }' || why="$why vDSO $3 of $2 cut;"
	[ "$4" -lt 5 ] || awk -v a="$5" -v b="$4" 'BEGIN { exit !(a <= 0.2 * b) }' || why="$why under systemstack $5 of $4 cut;"
	awk -v a="$7" -v b="$6" 'BEGIN { exit !(a <= 0.05 * b + 1) }' || why="$why mcall $7 of $6 cut;"
	if [ -z "$why" ]; then pass "$1"; else fail "$1" "$why"; fi
	set -- "$1" $(awk '/time\.now;/ && /main\.modePark\.func3;/ { t += $NF
		if ($0 ~ /(^|;)main\.modePark\.func3;(main\.nowDeep;)+time\.Now;(time\.runtimeNow;)?time\.now;/) ok += $NF }
		END { print t + 0, ok + 0 }' "$jf")
	echo "# $1: $3 of $2 samples in time.now under main.modePark.func3 on their true stack"
	if [ "$2" -ge 20 ] && awk -v a="$3" -v b="$2" 'BEGIN { exit !(a >= 0.97 * b) }'; then
		pass "$1-vdso-stacks"
	else
		fail "$1-vdso-stacks" "$3 of $2 right; wrong: $(awk '/time\.now;/ && /main\.modePark\.func3;/ && !/main\.modePark\.func3;(main\.nowDeep;)+time\.Now;(time\.runtimeNow;)?time\.now;/' "$jf" | head -2 | tr '\n' '|')"
	fi
}

for v in go go126 go127; do
	bin=$FIX/$v/agree
	if [ ! -x "$bin" ]; then
		skip "$v" "fixture missing: $bin (run scripts/fixtures.sh)"
		continue
	fi
	"$PMUPROF" record -q -e cpu-clock -F 4000 -o "$T/$v.pb.gz" -- "$bin" -mode park -secs 2 2>"$T/$v.err"
	"$PMUPROF" report -i "$T/$v.pb.gz" --folded >"$T/$v.folded"
	judge "$v-launched" "$T/$v.folded"
done

bin=$FIX/go/agree
need_file attached "$bin"
"$bin" -mode park -secs 4 &
p=$!
sleep 0.5
"$PMUPROF" record -q -e cpu-clock -F 4000 -p $p --duration 2 -o "$T/att.pb.gz" 2>"$T/att.err"
wait $p
"$PMUPROF" report -i "$T/att.pb.gz" --folded >"$T/att.folded"
judge go-attached "$T/att.folded"
