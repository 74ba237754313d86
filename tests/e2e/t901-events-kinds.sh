#!/bin/sh
# Events of issue 5 on real kernel objects: page-faults -c 1, a tracepoint
# (sched:sched_switch; tracefs mounted here if needed, unmounted after),
# a uprobe on a Go method (every call sampled), uretprobe refused, and the
# hardware path (fallback, --strict) or its skip with the reason.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd fixture "$GO"

# The fixture: built here so that its call counts are known.
mkdir -p "$T/fx"
cat >"$T/fx/main.go" <<'GO'
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

type Cache struct{ m map[int]int }

//go:noinline
func (c *Cache) Get(k int) int { return c.m[k] }

var sink int

// pace gives the profiler time to drain its ring buffer (a sample per call).
func pace() {
	ts := syscall.Timespec{Nsec: 5000000}
	syscall.Nanosleep(&ts, nil)
}

//go:noinline
func sleeper(n int) {
	ts := syscall.Timespec{Nsec: 2000000}
	for i := 0; i < n; i++ {
		syscall.Nanosleep(&ts, nil)
	}
}

//go:noinline
func touch(pages int) {
	b, err := syscall.Mmap(-1, 0, pages*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
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
	case "sleep":
		sleeper(n)
		fmt.Printf("sleeps %d\n", n)
	case "touch":
		touch(n)
		fmt.Printf("pages %d\n", n)
	}
}
GO
if ! (cd "$T/fx" && GO111MODULE=off gotool build -o fx main.go) >"$T/build.out" 2>&1; then
	skip all "cannot build the fixture: $(head -1 "$T/build.out")"
	exit 0
fi
fx=$T/fx/fx
out=$T/out.pb.gz

# page-faults -c 1: the fresh pages touched in main.touch, within 5 %
"$PMUPROF" record -q -e page-faults -c 1 -o "$out" -- "$fx" touch 2000 >"$T/o" 2>"$T/e"
"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
n=$(grep 'main\.touch' "$T/f" | awk '{ s += $NF } END { print s + 0 }')
if awk -v n="$n" 'BEGIN { exit !(n >= 1900 && n <= 2100) }'; then
	pass page-faults
else
	fail page-faults "$n samples in main.touch for 2000 pages: $(head -1 "$T/e")"
fi

# sched:sched_switch: one switch per sleep, in main.sleeper
mounted=
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ]; then
	if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
		mounted=/sys/kernel/tracing
	fi
fi
if [ -d /sys/kernel/tracing/events ] || [ -d /sys/kernel/debug/tracing/events ]; then
	if "$PMUPROF" record -q -e sched:sched_switch -o "$out" -- "$fx" sleep 50 >"$T/o" 2>"$T/e"; then
		"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
		n=$(grep 'main\.sleeper;syscall\.Nanosleep' "$T/f" | awk '{ s += $NF } END { print s + 0 }')
		if [ "$n" -ge 50 ] && [ "$n" -le 52 ]; then pass tracepoint; else fail tracepoint "$n switches in main.sleeper, 50 sleeps"; fi
	else
		fail tracepoint "$(head -1 "$T/e")"
	fi
	"$PMUPROF" list 'sched:*' >"$T/l" 2>&1
	if grep -q '^  sched:sched_switch  *\[Tracepoint event\]$' "$T/l"; then pass list-tracepoints; else fail list-tracepoints "$(head -3 "$T/l" | tr '\n' '|')"; fi
else
	skip tracepoint "tracefs not mounted and cannot be mounted"
fi
[ -n "$mounted" ] && umount "$mounted"

# uprobe on a Go method: every call, that method as the leaf, output unchanged
if [ -r /sys/bus/event_source/devices/uprobe/type ]; then
	if "$PMUPROF" record -q -e "uprobe:$fx:main.(*Cache).Get" -o "$out" -- "$fx" calls 10000 >"$T/o" 2>"$T/e"; then
		"$PMUPROF" report -i "$out" --folded >"$T/f" 2>/dev/null
		total=$(folded_total "$T/f")
		leaf=$(awk '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); if (fr[k] == "main.(*Cache).Get") s += $NF } END { print s + 0 }' "$T/f")
		# measured: 10012..10029 for 10000 calls (see the issue notes); within 1 %
		if [ "$(cat "$T/o")" != "calls 10000" ]; then
			fail uprobe-output "target printed '$(cat "$T/o")'"
		elif [ "$leaf" != "$total" ] || ! awk -v n="$total" 'BEGIN { exit !(n >= 10000 && n <= 10100) }'; then
			fail uprobe-calls "$total samples, $leaf with main.(*Cache).Get as the leaf, 10000 calls"
		else
			pass uprobe-calls
		fi
	else
		fail uprobe-calls "$(head -1 "$T/e")"
	fi
else
	skip uprobe-calls "no uprobe PMU in this kernel"
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
	expect_fail hw-strict 1 "cannot open 'cycles': the CPU has no PMU counter" "$PMUPROF" record --strict -e cycles -o "$out" -- "$fx" calls 100
	skip hw-real "no hardware PMU here (perf stat -e cycles true fails)"
fi
