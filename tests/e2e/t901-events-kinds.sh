#!/bin/sh
# Events of issue 5 on real kernel objects: page-faults -c 1,
# context-switches -c 1, both at once (-e a,b: one sample type each, report
# --event), a tracepoint (sched:sched_switch; tracefs mounted by pmuprof for
# itself where it is not, nothing left mounted), a uprobe on a Go method (every call sampled exactly
# once, on threads started later too), uretprobe refused, and the hardware
# path (fallback, --strict) or its skip with the reason.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd fixture "$GO"

# The fixture: built here so that its call counts are known.  It prints its
# own accounting too, from getrusage(RUSAGE_THREAD) of the main thread (where
# main.main stays): the minor faults of main.touch, the voluntary and
# involuntary switches of main.sleeper and of main.touch.
mkdir -p "$T/fx"
cat >"$T/fx/main.go" <<'GO'
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

type Cache struct{ m map[int]int }

//go:noinline
func (c *Cache) Get(k int) int { return c.m[k] }

var sink int

// the main thread's minor faults, voluntary and involuntary switches so far
func usage() (int64, int64, int64) {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return ru.Minflt, ru.Nvcsw, ru.Nivcsw
}

// what touch and sleeper did to the main thread: faults, voluntary, involuntary switches
var touchFlt, touchVol, touchInv, sleepVol, sleepInv int64

// pace gives the profiler time to drain its ring buffer (a sample per call).
func pace() {
	ts := syscall.Timespec{Nsec: 5000000}
	syscall.Nanosleep(&ts, nil)
}

//go:noinline
func sleeper(n int) {
	ts := syscall.Timespec{Nsec: 2000000}
	_, v0, i0 := usage()
	for i := 0; i < n; i++ {
		syscall.Nanosleep(&ts, nil)
	}
	_, v1, i1 := usage()
	sleepVol, sleepInv = v1-v0, i1-i0
}

//go:noinline
func touch(pages int) {
	b, err := syscall.Mmap(-1, 0, pages*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	// a fault per 4 KiB page whatever transparent_hugepage says
	syscall.Madvise(b, 15 /* MADV_NOHUGEPAGE */)
	f0, v0, i0 := usage()
	defer func() {
		f1, v1, i1 := usage()
		touchFlt, touchVol, touchInv = f1-f0, v1-v0, i1-i0
	}()
	for i := 0; i < pages; i++ {
		b[i*4096] = 1
		if i%10 == 9 {
			pace()
		}
	}
	syscall.Munmap(b)
}

// main.main stays on the main thread: uprobes are not inherited by new threads.
func init() { runtime.LockOSThread() }

func main() {
	n, _ := strconv.Atoi(os.Args[2])
	switch os.Args[1] {
	case "calls":
		c := &Cache{m: map[int]int{1: 2}}
		calls := 0
		for i := 0; i < n; i++ {
			sink += c.Get(i & 1)
			calls++
			if i%50 == 49 {
				pace()
			}
		}
		fmt.Printf("calls %d\n", calls)
	case "tcalls":
		// the calls on 4 threads the runtime starts after exec
		c := &Cache{m: map[int]int{1: 2}}
		var wg sync.WaitGroup
		var calls int64
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				runtime.LockOSThread()
				defer wg.Done()
				s := 0
				for i := 0; i < n/4; i++ {
					s += c.Get(i & 1)
					atomic.AddInt64(&calls, 1)
					if i%10 == 9 {
						pace()
					}
				}
				atomic.AddInt64((*int64)(unsafe.Pointer(&sink)), int64(s))
			}()
		}
		wg.Wait()
		fmt.Printf("calls %d\n", calls)
	case "both":
		touch(n)
		sleeper(50)
		fmt.Printf("pages %d sleeps 50\n", n)
		fmt.Printf("touch faults %d switches %d %d\nsleeper switches %d %d\n", touchFlt, touchVol, touchInv, sleepVol, sleepInv)
	case "sleep":
		sleeper(n)
		fmt.Printf("sleeps %d\n", n)
		fmt.Printf("sleeper switches %d %d\n", sleepVol, sleepInv)
	case "touch":
		touch(n)
		fmt.Printf("pages %d\n", n)
		fmt.Printf("touch faults %d switches %d %d\n", touchFlt, touchVol, touchInv)
	}
}
GO
if ! (cd "$T/fx" && GO111MODULE=off gotool build -o fx main.go) >"$T/build.out" 2>&1; then
	skip all "cannot build the fixture: $(head -1 "$T/build.out")"
	exit 0
fi
fx=$T/fx/fx
out=$T/out.pb.gz

# the fixture's own accounting in FILE: faults in main.touch; switches
# (voluntary + involuntary) of main.sleeper or main.touch
faults() { sed -n 's/^touch faults \([0-9]*\) .*/\1/p' "$1"; }
switches() { sed -n "s/^$2 .*switches \([0-9]*\) \([0-9]*\)$/\1 \2/p" "$1" | awk '{ print $1 + $2 }'; }
# within N TRUTH: N within 1 % + 3 of TRUTH (a fault is a sample, -c 1)
within() { awk -v n="$1" -v t="$2" 'BEGIN { d = n - t; if (d < 0) d = -d; exit !(t > 0 && d <= t / 100 + 3) }'; }

# page-faults -c 1: the fresh pages touched in main.touch (2000, one fault
# each: the fixture asks for no huge pages) and the thread's own count of
# its minor faults there agree
"$PMUPROF" record -q -e page-faults -c 1 -o "$out" -- "$fx" touch 2000 >"$T/o" 2>"$T/e"
"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
n=$(grep 'main\.touch' "$T/f" | awk '{ s += $NF } END { print s + 0 }')
tf=$(faults "$T/o")
echo "# page-faults: $n samples in main.touch; the thread counted ${tf:-?} faults there (2000 pages)"
if within "$n" "${tf:-0}" && [ "${tf:-0}" -ge 2000 ]; then
	pass page-faults
else
	fail page-faults "$n samples in main.touch for 2000 pages, ${tf:-?} faults by getrusage: $(head -1 "$T/e")"
fi

# A sleep is one switch in the nanosleep syscall itself (the leaf: Syscall6);
# a loaded machine adds others under it (exitsyscall handing the P back,
# preemptions), which are not counted.
sleep_leaf='main\.sleeper;syscall\.Nanosleep;[^ ]*Syscall6 [0-9]+$'

# context-switches -c 1: one switch per sleep, in main.sleeper: at least the
# 50 sleeps, at most the switches the thread counted there (getrusage: the
# sleeps and the preemptions a loaded machine adds)
"$PMUPROF" record -q -e context-switches -c 1 -o "$out" -- "$fx" sleep 50 >"$T/o" 2>"$T/e"
"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
n=$(grep -E "$sleep_leaf" "$T/f" | awk '{ s += $NF } END { print s + 0 }')
sw=$(switches "$T/o" sleeper)
echo "# context-switches: $n in main.sleeper's nanosleep; the thread counted ${sw:-?} switches there (50 sleeps)"
if [ "$n" -ge 50 ] && [ "$n" -le "${sw:-0}" ]; then pass context-switches; else fail context-switches "$n switches in main.sleeper, 50 sleeps, ${sw:-?} by getrusage: $(head -1 "$T/e")"; fi

# both at once: a sample type each; report --event shows one, its samples only
"$PMUPROF" record -q -e page-faults,context-switches -c 1 --raw "$T/cap" -o "$out" -- "$fx" both 2000 >"$T/o" 2>"$T/e"
"$PMUPROF" report -i "$out" >"$T/r" 2>&1
if grep -q '^# sample types: samples/count, page-faults/count (shown), context-switches/count$' "$T/r"; then
	pass multi-types
else
	fail multi-types "$(grep 'sample types' "$T/r")$(head -1 "$T/e")"
fi
"$PMUPROF" report -i "$out" --event page-faults --folded >"$T/fp" 2>&1
"$PMUPROF" report -i "$out" --event context-switches --folded >"$T/fc" 2>&1
pf=$(grep 'main\.touch' "$T/fp" | awk '{ s += $NF } END { print s + 0 }')
pfs=$(grep 'main\.sleeper' "$T/fp" | awk '{ s += $NF } END { print s + 0 }')
cs=$(grep -E "$sleep_leaf" "$T/fc" | awk '{ s += $NF } END { print s + 0 }')
# main.touch sleeps in main.pace every 10 pages: 200 switches there (-2 %:
# under load a sample's stack can be cut at a preemption's mcall; at most
# what the thread counted there)
cst=$(grep -E 'main\.touch;main\.pace;syscall\.Nanosleep;[^ ]*Syscall6 [0-9]+$' "$T/fc" | awk '{ s += $NF } END { print s + 0 }')
tf=$(faults "$T/o") sw=$(switches "$T/o" sleeper) tsw=$(switches "$T/o" touch)
echo "# -e page-faults,context-switches: $pf faults in main.touch (2000 pages; ${tf:-?} by getrusage), $pfs in main.sleeper; $cs switches in main.sleeper (50 sleeps; ${sw:-?} by getrusage), $cst in main.touch (200 paces; ${tsw:-?} by getrusage)"
if within "$pf" "${tf:-0}" && [ "${tf:-0}" -ge 2000 ] && [ "$cs" -ge 49 ] && [ "$cs" -le "${sw:-0}" ] &&
	[ "$pfs" -le 5 ] && [ "$cst" -ge 196 ] && [ "$cst" -le "${tsw:-0}" ]; then
	pass multi-per-event
else
	fail multi-per-event "faults $pf in touch (${tf:-?}), $pfs in sleeper; switches $cs in sleeper (${sw:-?}), $cst in touch (${tsw:-?})"
fi
"$PMUPROF" report -i "$out" --event context-switches >"$T/rc" 2>&1
all=$(folded_total "$T/fc")
if grep -q "^# total samples: $all\$" "$T/rc" && grep -q 'context-switches/count (shown)' "$T/rc"; then
	pass multi-report-event
else
	fail multi-report-event "$(grep 'total samples\|sample types' "$T/rc" | tr '\n' '|') folded: $all"
fi
# the capture replays into the same profile, event by event
ok=1
for ev in page-faults context-switches; do
	"$PMUPROF" report -i "$out" --event $ev --folded >"$T/live" 2>&1
	"$PMUPROF" report -i "$T/cap" --event $ev --folded >"$T/replay" 2>&1
	cmp -s "$T/live" "$T/replay" || { ok=; fail multi-replay "$ev: $(diff "$T/live" "$T/replay" | head -3 | tr '\n' '|')"; }
done
[ -n "$ok" ] && pass multi-replay
expect_fail multi-no-event 2 "no event 'cycles' in '.*' \\(it has: page-faults, context-switches\\)" "$PMUPROF" report -i "$out" --event cycles
if [ -n "$GO" ]; then
	gotool tool pprof -sample_index=page-faults -tagfocus=event=page-faults -top "$out" >"$T/gp" 2>&1
	if grep -q 'main\.touch' "$T/gp" && ! grep -q 'main\.sleeper' "$T/gp"; then pass multi-gotool; else fail multi-gotool "$(tail -8 "$T/gp" | tr '\n' '|')"; fi
fi
expect_fail multi-twice 2 "event 'page-faults' given twice" "$PMUPROF" record -e page-faults,faults -o "$out" -- "$fx" calls 1

# sched:sched_switch: one switch per sleep, in main.sleeper (pmuprof mounts
# tracefs for itself where it is not mounted; nothing is left mounted after)
hostfs=$(grep -c ' tracefs ' /proc/mounts)
if tracefs_ok; then
	if "$PMUPROF" record -q -e sched:sched_switch -o "$out" -- "$fx" sleep 50 >"$T/o" 2>"$T/e"; then
		"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
		n=$(grep -E "$sleep_leaf" "$T/f" | awk '{ s += $NF } END { print s + 0 }')
		sw=$(switches "$T/o" sleeper)
		# every switch of the process is a sample: a loaded machine can starve
		# the drain, then a switch is a sample or counted lost (said on stderr)
		lost=$(sed -n 's/.*warning: lost \([0-9]*\) samples.*/\1/p' "$T/e")
		if [ "$((n + ${lost:-0}))" -ge 50 ] && [ "$n" -le "${sw:-0}" ] && [ "$n" -ge 10 ]; then pass tracepoint; else fail tracepoint "$n switches in main.sleeper (${lost:-?} samples lost), 50 sleeps, ${sw:-?} by getrusage"; fi
	else
		fail tracepoint "$(head -1 "$T/e")"
	fi
	if [ "$(grep -c ' tracefs ' /proc/mounts)" = "$hostfs" ]; then pass tracefs-not-left; else fail tracefs-not-left "tracefs mounts here: $hostfs before, $(grep -c ' tracefs ' /proc/mounts) after"; fi
	if [ "$hostfs" != 0 ]; then
		"$PMUPROF" list 'sched:*' >"$T/l" 2>&1
		if grep -q '^  sched:sched_switch  *\[Tracepoint event\]$' "$T/l"; then pass list-tracepoints; else fail list-tracepoints "$(head -3 "$T/l" | tr '\n' '|')"; fi
	fi
else
	skip tracepoint "no tracefs for pmuprof (not root, or a kernel without it)"
fi

# uprobe on a Go method: every call, that method as the leaf, output unchanged
if [ -r /sys/bus/event_source/devices/uprobe/type ]; then
	if "$PMUPROF" record -e "uprobe:$fx:main.(*Cache).Get" -o "$out" -- "$fx" calls 10000 >"$T/o" 2>"$T/e"; then
		"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
		total=$(folded_total "$T/f")
		leaf=$(awk '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); if (fr[k] == "main.(*Cache).Get") s += $NF } END { print s + 0 }' "$T/f")
		# exactly: the probe sits after the stack check, so a call that grows
		# the stack (morestack re-enters the function) counts once; a loaded
		# machine can starve the drain: then a call is a sample or counted lost
		lost=$(sed -n 's/.* samples (\([0-9]*\) lost).*/\1/p' "$T/e")
		if [ "$(cat "$T/o")" != "calls 10000" ]; then
			fail uprobe-output "target printed '$(cat "$T/o")'"
		elif [ "$leaf" != "$total" ] || [ "$((total + ${lost:-0}))" != 10000 ] || [ "${lost:-0}" -ge 1000 ]; then
			fail uprobe-calls "$total samples + ${lost:-?} lost, $leaf with main.(*Cache).Get as the leaf, 10000 calls"
		else
			pass uprobe-calls
		fi
	else
		fail uprobe-calls "$(head -1 "$T/e")"
	fi
	# threads the runtime starts later inherit the probe (defined in tracefs)
	if tracefs_ok; then
		"$PMUPROF" record -e "uprobe:$fx:main.(*Cache).Get" -o "$out" -- "$fx" tcalls 10000 >"$T/o" 2>"$T/e"
		"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
		total=$(folded_total "$T/f")
		leaf=$(awk '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); if (fr[k] == "main.(*Cache).Get") s += $NF } END { print s + 0 }' "$T/f")
		left=$(probes_left)
		# a loaded machine can starve the drain for a while: every call is a sample or counted lost
		lost=$(sed -n 's/.* samples (\([0-9]*\) lost).*/\1/p' "$T/e")
		echo "# uprobe on 4 threads started later: $total samples + ${lost:-?} lost for 10000 calls"
		if [ "$(cat "$T/o")" = "calls 10000" ] && [ "$((total + ${lost:-0}))" = 10000 ] && [ "${lost:-0}" -lt 1000 ] && [ "$leaf" = "$total" ] && [ "$left" = 0 ] && ! grep -q 'warning: uprobe' "$T/e"; then
			pass uprobe-new-threads
		else
			fail uprobe-new-threads "$total samples + ${lost:-?} lost, $leaf with Get as the leaf, 10000 calls on 4 new threads; probes left: $left; $(grep warning "$T/e")"
		fi
	fi
else
	skip uprobe-calls "no uprobe PMU in this kernel"
fi
# without tracefs (a root named by $PMUPROF_TRACEFS that has none: never
# mounted for the user) the uprobe is not inherited: one warning says so
if [ -r /sys/bus/event_source/devices/uprobe/type ]; then
	PMUPROF_TRACEFS=$T/none "$PMUPROF" record -e "uprobe:$fx:main.(*Cache).Get" -o "$out" -- "$fx" calls 100 >"$T/o" 2>"$T/e"
	if grep -q "^pmuprof: warning: uprobe:main.(\*Cache).Get: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing): threads started after the recording starts are not probed$" "$T/e"; then
		pass uprobe-no-tracefs
	else
		fail uprobe-no-tracefs "$(head -2 "$T/e" | tr '\n' '|')"
	fi
fi
expect_fail uretprobe 2 'return probes are refused' "$PMUPROF" record -e "uretprobe:$fx:main.(*Cache).Get" -o "$out" -- "$fx" calls 1
expect_fail uprobe-return 2 'return probes are refused' "$PMUPROF" record -e "uprobe:$fx:main.(*Cache).Get%return" -o "$out" -- "$fx" calls 1
expect_fail uprobe-nearest 2 "did you mean .*'main\\.\\(\\*Cache\\)\\.Get'" "$PMUPROF" record -e "uprobe:$fx:Get" -o "$out" -- "$fx" calls 1

# hardware events: the fallback and --strict here; the real path where a PMU exists
if command -v perf >/dev/null 2>&1 && perf stat -e cycles true >/dev/null 2>&1 &&
	! perf stat -x, -e cycles true 2>&1 | grep -q 'not supported\|not counted'; then
	check hw-cache "$PMUPROF" record -q -e L1-dcache-load-misses -c 10000 -o "$out" -- "$fx" calls 100
	skip hw-fallback "this machine has a PMU: no fallback to test"
else
	echo "# hardware event paths: perf stat -e cycles fails here (no PMU); testing the fallback"
	"$PMUPROF" record -e LLC-load-misses -o "$out" -- "$fx" calls 100 >"$T/o" 2>"$T/e"
	if grep -q '^pmuprof: warning: LLC-load-misses is not supported here (no hardware PMU); falling back to cpu-clock$' "$T/e" && [ "$(grep -c warning "$T/e")" -eq 1 ]; then
		pass hw-fallback
	else
		fail hw-fallback "$(head -2 "$T/e" | tr '\n' '|')"
	fi
	"$PMUPROF" record -e cpu/event=0x3c,umask=0x00/,L1-dcache-load-misses -o "$out" -- "$fx" calls 100 >"$T/o" 2>"$T/e"
	if grep -q '^pmuprof: warning: cpu/event=0x3c,umask=0x00/, L1-dcache-load-misses are not supported here (no hardware PMU); falling back to cpu-clock$' "$T/e" && [ "$(grep -c warning "$T/e")" -eq 1 ] &&
		"$PMUPROF" report -i "$out" | grep -q '^# sample types: samples/count, cpu/nanoseconds (shown)$'; then
		pass hw-fallback-pmu-syntax
	else
		fail hw-fallback-pmu-syntax "$(head -2 "$T/e" | tr '\n' '|')"
	fi
	expect_fail hw-strict 1 "cannot open 'cycles': the CPU has no PMU counter" "$PMUPROF" record --strict -e cycles -o "$out" -- "$fx" calls 100
	skip hw-real "no hardware PMU here (perf stat -e cycles true fails)"
fi
