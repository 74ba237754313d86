#!/bin/sh
# Off-CPU time (record --off-cpu, issue 18) on tests/go/offcpu: main.pipeReader
# blocks in read(2) on a blocking pipe that main.pipeWriter feeds after known
# sleeps, main.syncer in fsync(2) on a file in $FIX (on a tmpfs, where fsync
# does not block, its part is not judged); every other goroutine
# parks, so the runtime's threads go idle in the kernel meanwhile.  The
# fixture's truth: the time spent in each call less its thread's CPU time
# (CLOCK_THREAD_CPUTIME_ID), its thread and goroutine ids; the reader runs
# with the pprof label role=reader, and the time its thread waited on a run
# queue (schedstat: woken and not running yet, which is off CPU too, or
# preempted, which is not blocked: left out).  Checked on each profile:
#   - the off-CPU time of the stacks through main.pipeReader / syscall.Fsync
#     between the time blocked (call less CPU less run queue) and the time
#     off CPU (call less CPU), 10 % off either (pmuprof's block starts at
#     the switch record, after the sample's stack copy, which no thread's CPU
#     clock is charged: the fixture counts it off CPU, 15-30 us a switch,
#     1-3 % under the lower bound), and at least 90 % of it under a kernel
#     frame of the pipe read (a function named *pipe*) / of fsync (*fsync* or
#     *sync_file*), under "schedule";
#   - the reader's goroutine id and label as the fixture printed them;
#   - idle runtime threads left out (no off-CPU time under runtime.stopm,
#     mPark, notesleep, sysmon), and counted in the profile's comment.
# Launched (with -e cpu-clock in the same profile, and --raw: the replay
# equals the live profile), attached, stripped; Go 1.26, 1.19 and 1.27.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd go "$GO"
need_file offcpu "$FIX/go126/offcpu" "$FIX/go126/offcpu-stripped"
# the fsync'd file on the checkout's disk ($T may be a tmpfs, where fsync does not block)
ARGS="-n 10 -sleep 40ms -kb 2048 -dir $FIX"

# judge NAME: the checks on $T/NAME.{pb.gz,out,err}
judge() {
	n=$1 pb=$T/$1.pb.gz
	if ! "$PMUPROF" report -i "$pb" --sample-index off-cpu --folded >"$T/$n.folded" 2>"$T/$n.rerr" ||
		! grep -q '^truth main.syncer' "$T/$n.out"; then
		fail "$n" "no off-CPU profile: $(head -2 "$T/$n.err" "$T/$n.rerr" | tr '\n' '|')"
		return
	fi
	r=$(awk -v out="$T/$n.out" '
		BEGIN { while ((getline l < out) > 0) { split(l, f, " "); if (f[1] == "truth") { want[f[2]] = (f[4] - f[5]) / 1e6; lo[f[2]] = (f[4] - f[5] - f[6]) / 1e6 } } }
		{ v = $NF / 1e6; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";")
		  site = ""; kern = 0; sched = 0
		  for (i = 1; i <= k; i++) {
			if (fr[i] == "main.pipeReader") site = "main.pipeReader"
			if (fr[i] == "syscall.Fsync") site = "main.syncer"
			if (fr[i] ~ /_\[k\]$/ && fr[i] ~ /pipe/) kern = kern "p"
			if (fr[i] ~ /_\[k\]$/ && fr[i] ~ /(fsync|sync_file)/) kern = kern "f"
			if (fr[i] == "schedule_[k]" || fr[i] == "__schedule_[k]") sched = 1
			if (fr[i] ~ /^runtime\.(stopm|mPark|notesleep|sysmon|templateThread)$/) idle += v
		  }
		  if (site != "") { got[site] += v; if (sched && index(kern, site == "main.pipeReader" ? "p" : "f")) kv[site] += v } }
		END { bad = 0
		      for (s in want) { a = got[s] + 0; w = want[s]; kshare = a ? 100 * kv[s] / a : 0
		                        printf "%s %.1f ms (fixture %.1f to %.1f), %.0f %% under its kernel frames; ", s, a, lo[s], w, kshare
		                        if (s == "main.syncer" && w < 2) { printf "(fsync did not block here: not judged) "; continue }
		                        if (w <= 0 || a < 0.9 * lo[s] || a > 1.1 * w || kshare < 90) bad = 1 }
		      printf "idle %.1f ms", idle; if (idle > 0) bad = 1
		      print bad ? " BAD" : " ok" }' "$T/$n.folded")
	echo "# $n: $r"
	case $r in
	*" ok") pass "$n" ;;
	*) fail "$n" "$r; $(gotool tool pprof -comments "$pb" 2>/dev/null | grep '^off-cpu:') $(head -2 "$T/$n.err" | tr '\n' '|')" ;;
	esac
	# the goroutine the reader served, its label; the idle threads counted
	gotool tool pprof -sample_index=off-cpu -focus='^main\.pipeReader$' -tags "$pb" >"$T/$n.tags" 2>/dev/null
	g=$(awk '/^goid main.pipeReader/ { print $3 }' "$T/$n.out")
	gg=$(awk '/^ goroutine:/ { s = 1; next } s && NF == 0 { exit } s { print $NF }' "$T/$n.tags" | tr '\n' ' ')
	role=$(awk '/^ role:/ { s = 1; next } s && NF == 0 { exit } s { print $NF }' "$T/$n.tags" | tr '\n' ' ')
	idle=$(gotool tool pprof -comments "$pb" 2>/dev/null | sed -n 's/.*, \([0-9]*\) idle runtime threads (no goroutine.*/\1/p')
	if [ "$gg" = "$g " ] && [ "$role" = "reader " ] && [ "${idle:-0}" -gt 0 ]; then
		pass "$n-goroutine"
	else
		fail "$n-goroutine" "goroutine '$gg' (fixture $g), role '$role', idle threads counted '${idle:-none}'"
	fi
}

launch() { # NAME FIXTURE [OPTIONS]
	n=$1 f=$2
	shift 2
	"$PMUPROF" record --off-cpu "$@" -o "$T/$n.pb.gz" -- "$f" $ARGS -delay 300ms >"$T/$n.out" 2>"$T/$n.err"
	judge "$n"
}
attach() { # NAME FIXTURE
	: >"$T/$1.out"
	"$2" $ARGS -delay 700ms >"$T/$1.out" 2>&1 &
	p=$!
	k=0
	while ! grep -q '^ready' "$T/$1.out" && [ $k -lt 50 ]; do sleep 0.1; k=$((k + 1)); done
	"$PMUPROF" record --off-cpu -p $p -o "$T/$1.pb.gz" 2>"$T/$1.err"
	wait $p
	judge "$1"
}

# with CPU samples in the same profile, and a capture
n=go126-cpu
launch $n "$FIX/go126/offcpu" -e cpu-clock --raw "$T/$n.data"
"$PMUPROF" report -i "$T/$n.pb.gz" >"$T/$n.report" 2>&1
cpu=$("$PMUPROF" report -i "$T/$n.pb.gz" --sample-index cpu --folded 2>/dev/null | folded_total /dev/stdin)
if grep -q '^# sample types: samples/count, cpu/nanoseconds (shown), off-cpu/nanoseconds$' "$T/$n.report" && [ "${cpu:-0}" -gt 0 ]; then
	pass "$n-types"
else
	fail "$n-types" "$(sed -n 2p "$T/$n.report"), cpu total ${cpu:-none}"
fi
"$PMUPROF" report -i "$T/$n.data" --pprof "$T/$n.replay.pb.gz" >/dev/null 2>"$T/$n.rerr"
for f in pb.gz replay.pb.gz; do
	gotool tool pprof -traces -sample_index=off-cpu "$T/$n.$f" 2>/dev/null | grep -v '^ *\(File\|Type\|Time\|Duration\|Build ID\):' >"$T/$n.$f.traces"
done
if grep -q pipeReader "$T/$n.pb.gz.traces" && cmp -s "$T/$n.pb.gz.traces" "$T/$n.replay.pb.gz.traces"; then
	pass "$n-replay"
else
	fail "$n-replay" "$(diff "$T/$n.pb.gz.traces" "$T/$n.replay.pb.gz.traces" | head -5 | tr '\n' '|') $(head -2 "$T/$n.rerr")"
fi

attach go126-attach "$FIX/go126/offcpu"
launch go126-stripped "$FIX/go126/offcpu-stripped"
if [ -x "$GOFIX/offcpu" ]; then
	launch go119 "$GOFIX/offcpu"
	attach go119-stripped-attach "$GOFIX/offcpu-stripped"
else
	skip go119 "no $GOFIX/offcpu (scripts/fixtures.sh)"
fi
if [ -x "$FIX/go127/offcpu" ]; then
	launch go127 "$FIX/go127/offcpu"
else
	skip go127 "no $FIX/go127/offcpu (scripts/fixtures.sh builds it when the toolchain is there)"
fi

# errors: the kernel's samples and callchain are what the profile is made of
expect_fail no-kernel 1 "off-cpu needs samples in the kernel.*perf_event_paranoid" env PMUPROF_FAIL_OPEN=EACCES "$PMUPROF" record --off-cpu -o "$T/x.pb.gz" -- /bin/true
expect_fail no-callchain 2 "off-cpu needs the kernel's callchain" "$PMUPROF" record --off-cpu --no-callchain -o "$T/x.pb.gz" -- /bin/true
exit 0
