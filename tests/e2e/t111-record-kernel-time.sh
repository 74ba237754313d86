#!/bin/sh
# The kernel's time is counted by default, as Go's profiler counts it: a
# program that spends about half its CPU in read(2) of /dev/zero (the kernel
# copying) and half in user code gets, in main.sysWork, the share of its
# CPU that its own getrusage calls system time (printed by the fixture, same
# run), charged to the syscall's Go frame with no kernel frame; the total
# against user + system time.  With :u, the user's modes are kept (user_cpu,
# sysWork's share near nothing).  Where the kernel refuses its part (pmuprof
# run as nobody under perf_event_paranoid >= 2): one warning line, the
# sample type user_cpu and report's header saying "user CPU".  Each Go
# version's build of the fixture.
. "$(dirname "$0")/lib.sh"
need_perf

# sys_share FOLDED: % of samples with main.sysWork in the stack, and % of
# those whose leaf is a syscall's Go frame (syscall.Syscall*, *Syscall6,
# syscall.RawSyscall*), as "SHARE LEAF"
sys_share() {
	awk '{ n = $NF; t += n; if ($0 ~ /(^|;)main\.sysWork;/) { s += n; l = $0; sub(/ [0-9]+$/, "", l);
		k = split(l, fr, ";"); if (fr[k] ~ /(^|\/|\.)(Raw)?Syscall[0-9]*(NoError)?$/) c += n } }
		END { printf "%.1f %.1f\n", t ? 100 * s / t : 0, s ? 100 * c / s : 0 }' "$1"
}
# truth OUT: "USER_MS SYS_MS" from the fixture's output
truth() { sed -n 's/^rusage user_ms=\([0-9]*\) sys_ms=\([0-9]*\)$/\1 \2/p' "$1"; }

for v in go go126 go127; do
	bin=$FIX/$v/agree
	if [ ! -x "$bin" ]; then
		skip "$v" "fixture missing: $bin (run scripts/fixtures.sh)"
		continue
	fi
	"$PMUPROF" record -q -e cpu-clock -o "$T/$v.pb.gz" -- "$bin" -mode sys -secs 1.5 >"$T/$v.out" 2>"$T/$v.err"
	"$PMUPROF" report -i "$T/$v.pb.gz" --folded >"$T/$v.folded" 2>/dev/null
	read -r us ss <<EOF
$(truth "$T/$v.out")
EOF
	read -r sh lf <<EOF
$(sys_share "$T/$v.folded")
EOF
	tot=$(folded_total "$T/$v.folded")
	# the samples the kernel took: with those a starved reader lost
	lost=$("$PMUPROF" report -i "$T/$v.pb.gz" | sed -n 's/^# lost \([0-9]*\) samples$/\1/p')
	taken=$((tot + ${lost:-0}))
	# the truth's share: system time of all CPU time (sysmon's and the
	# GC's syscalls are in both), and pmuprof's count at 1 kHz
	want=$(awk -v u="${us:-0}" -v s="${ss:-0}" 'BEGIN { printf "%.1f\n", (u + s > 0 ? 100 * s / (u + s) : 0) }')
	echo "# $v: main.sysWork ${sh:-?} % of $tot samples (${lf:-?} % of them on a syscall leaf); getrusage: user ${us:-?} ms, sys ${ss:-?} ms: sys ${want} %"
	# +-12 pp: the rusage split is by ticks and sysWork's own user part (the
	# read path) is a few %; user mode only would put sysWork near 5 %
	if [ -z "${us:-}" ] || grep -v '^pmuprof: warning: lost [0-9]* samples' "$T/$v.err" | grep -q .; then
		fail "$v-kernel-share" "no truth or stderr: $(head -2 "$T/$v.err" "$T/$v.out" | tr '\n' '|')"
	elif awk -v a="$sh" -v b="$want" 'BEGIN { d = a - b; exit !(b >= 25 && d <= 12 && d >= -12) }'; then
		pass "$v-kernel-share"
	else
		fail "$v-kernel-share" "main.sysWork $sh % of samples, system time $want % of the CPU"
	fi
	# the kernel's time under the syscall's Go frame, no kernel frame
	if awk -v l="$lf" 'BEGIN { exit !(l >= 80) }' && ! grep -q '_\[k\]' "$T/$v.folded"; then
		pass "$v-syscall-leaf"
	else
		fail "$v-syscall-leaf" "$lf % of sysWork's samples on a syscall leaf; kernel frames: $(grep -c '_\[k\]' "$T/$v.folded")"
	fi
	# samples for user + system time: 1 per ms, 0.8..1.2 (+ 20 for threads' unfinished periods)
	if awk -v n="$taken" -v u="$us" -v s="$ss" 'BEGIN { exit !(n >= 0.8 * (u + s) - 20 && n <= 1.2 * (u + s) + 20) }'; then
		pass "$v-count"
	else
		fail "$v-count" "$taken samples (with lost) at 1 kHz for $us + $ss ms of user + system time"
	fi
done

# :u: user mode only, as asked, with no warning and the type saying so: the
# samples for the fixture's user time, and main.sysWork's share well under
# the default's (its user part only)
bin=$FIX/go/agree
need_file user "$bin"
"$PMUPROF" record -q -e cpu-clock:u -o "$T/u.pb.gz" -- "$bin" -mode sys -secs 1 >"$T/u.out" 2>"$T/u.err"
"$PMUPROF" report -i "$T/u.pb.gz" --folded >"$T/u.folded" 2>/dev/null
"$PMUPROF" report -i "$T/u.pb.gz" >"$T/u.txt" 2>/dev/null
set -- $(sys_share "$T/u.folded") $(truth "$T/u.out") $(folded_total "$T/u.folded") $(sys_share "$T/go.folded")
echo "# :u: main.sysWork $1 % of $5 samples (default: $6 %); getrusage: user $3 ms, sys $4 ms"
if ! grep -v '^pmuprof: warning: lost [0-9]* samples' "$T/u.err" | grep -q . && grep -q '^# sample types: samples/count, user_cpu/nanoseconds' "$T/u.txt" &&
	awk -v s="$1" -v d="$6" -v n="$5" -v u="$3" 'BEGIN { exit !(s < d - 10 && n >= 0.75 * u - 20 && n <= 1.25 * u + 20) }'; then
	pass user-modifier
else
	fail user-modifier "sysWork $1 % (default $6 %), $5 samples for $3 ms user, $(grep '^# sample types' "$T/u.txt"), stderr: $(head -2 "$T/u.err" | tr '\n' '|')"
fi

# refused: pmuprof itself as nobody, under paranoid >= 2
lvl=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 0)
if [ "$(id -u)" != 0 ]; then
	skip refused "not root: cannot run pmuprof as nobody"
elif [ "$lvl" -lt 2 ]; then
	skip refused "kernel.perf_event_paranoid=$lvl: the kernel's time is everybody's to count"
elif ! su -s /bin/sh nobody -c "test -x '$PMUPROF' && test -x '$bin'" 2>/dev/null; then
	skip refused "user nobody cannot run $PMUPROF or $bin (a parent directory closed to others)"
else
	mkdir "$T/nb" && chmod 1777 "$T/nb" && chmod o+rx "$T"
	su -s /bin/sh nobody -c "'$PMUPROF' record -q -e cpu-clock -o '$T/nb/n.pb.gz' -- '$bin' -mode sys -secs 0.5" >"$T/n.out" 2>"$T/n.err"
	rc=$?
	"$PMUPROF" report -i "$T/nb/n.pb.gz" >"$T/n.txt" 2>/dev/null
	if [ $rc -eq 0 ] && [ "$(wc -l <"$T/n.err")" -eq 1 ] &&
		grep -q "^pmuprof: warning: the kernel's time is not counted (kernel.perf_event_paranoid=$lvl): samples are user CPU only" "$T/n.err"; then
		pass refused-warning
	else
		fail refused-warning "exit $rc, stderr: $(head -3 "$T/n.err" | tr '\n' '|')"
	fi
	if grep -q '^# sample types: samples/count, user_cpu/nanoseconds (shown)$' "$T/n.txt" &&
		grep -q '^# pmuprof record: event cpu-clock, .*user CPU' "$T/n.txt"; then
		pass refused-user-cpu
	else
		fail refused-user-cpu "$(grep '^# sample types\|^# pmuprof record' "$T/n.txt" | tr '\n' '|')"
	fi
fi
