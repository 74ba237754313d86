// Command attach is a test fixture for `pmuprof record -p`: a process that is
// already running when the profiler attaches, and that creates new OS
// threads afterwards.
//
// At start it creates -threads idle OS threads (goroutines locked to their
// thread, blocked on a channel), prints one line
//
//	ready pid=PID threads=N idle=TID,...    (the first 8 idle threads)
//
// and waits.  Each SIGUSR1 (or, with -start, a timer) starts one round:
//
//   - every idle thread spins main.idleSpin for -idle-iters iterations;
//   - three workers run main.late1, main.late2 and main.late3 for 1, 2 and
//     3 units of work, each on an OS thread created after the round began:
//     a worker that lands on a thread that existed before retires it (a
//     goroutine that exits locked ends its thread) and tries again.  The
//     loops neither allocate nor make system calls, so their CPU time splits
//     1:2:3 (16.7/33.3/50 %).
//
// Every worker checks its own arithmetic: worker k runs k chunks of the same
// xorshift chain, so chunk c of every worker must give the same value, and
// the running sum of the loop index must be n(n-1)/2 per chunk.  After the
// round it prints
//
//	round R ok x=HEX workers=TID,TID,TID elapsed=SECONDS
//
// (or "round R MISMATCH ..." and exit 1).  After -rounds rounds it exits 0.
//
// Just before that line it prints its own accounting of the CPU time the
// round used (seconds, from getrusage: RUSAGE_THREAD for each worker and
// idle thread, RUSAGE_SELF for the process), the truth a profile of it is
// compared with:
//
//	cpu round=R late1=S late2=S late3=S process=S idle-min=S idle-total=S
//
// With -idle-cpu D each idle thread spins until its thread has used D of
// CPU time in the round (and at least -idle-iters iterations), so that the
// time sampled does not depend on the speed of the CPU.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// iterations in one unit of work at -scale 1 (about 0.35 s of CPU)
const unit = 200_000_000

var sink uint64

// The three bodies are identical on purpose: equal cost per iteration.

//go:noinline
func late1(n int, x uint64) (uint64, uint64) {
	var s uint64
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		s += uint64(i)
	}
	return x, s
}

//go:noinline
func late2(n int, x uint64) (uint64, uint64) {
	var s uint64
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		s += uint64(i)
	}
	return x, s
}

//go:noinline
func late3(n int, x uint64) (uint64, uint64) {
	var s uint64
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		s += uint64(i)
	}
	return x, s
}

//go:noinline
func idleSpin(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// cpuNow is the CPU time (user + system) of this thread (self false) or of
// the whole process (self true).
func cpuNow(self bool) time.Duration {
	var ru syscall.Rusage
	who := 1 // RUSAGE_THREAD
	if self {
		who = syscall.RUSAGE_SELF
	}
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var idleCPU time.Duration

// spinIdle spins n iterations, then on until this thread used idleCPU since
// t0; returns the thread CPU time the spin used.
func spinIdle(n int) time.Duration {
	t0 := cpuNow(false)
	sink += idleSpin(n)
	for idleCPU > 0 && cpuNow(false)-t0 < idleCPU {
		sink += idleSpin(20000)
	}
	return cpuNow(false) - t0
}

func threadIDs() map[int]bool {
	ids := map[int]bool{}
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return ids
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, s := range names {
		if v, err := strconv.Atoi(s); err == nil {
			ids[v] = true
		}
	}
	return ids
}

type result struct {
	tid    int
	chunks []uint64
	ok     bool
	cpu    time.Duration
}

// onFreshThread runs f on an OS thread that is not in old.
func onFreshThread(old map[int]bool, tries int, f func(tid int)) {
	go func() {
		runtime.LockOSThread()
		tid := syscall.Gettid()
		if old[tid] && tries > 0 {
			// exiting while locked terminates this thread (m0 is only parked)
			onFreshThread(old, tries-1, f)
			return
		}
		f(tid)
		runtime.UnlockOSThread()
	}()
}

func round(r int, n, idleIters int, idle []chan int) bool {
	t0 := time.Now()
	c0 := cpuNow(true)
	old := threadIDs()
	var wg sync.WaitGroup
	for _, c := range idle {
		c <- idleIters
	}
	funcs := []func(int, uint64) (uint64, uint64){late1, late2, late3}
	res := make([]result, 3)
	var want uint64 // n(n-1)/2 without overflow in the product
	if n%2 == 0 {
		want = uint64(n/2) * uint64(n-1)
	} else {
		want = uint64(n) * uint64((n-1)/2)
	}
	wg.Add(3)
	for k := 0; k < 3; k++ {
		k := k
		onFreshThread(old, 64, func(tid int) {
			defer wg.Done()
			x := uint64(0x9e3779b97f4a7c15) + uint64(r)
			res[k] = result{tid: tid, ok: true}
			t0 := cpuNow(false)
			defer func() { res[k].cpu = cpuNow(false) - t0 }()
			for c := 0; c <= k; c++ {
				var s uint64
				x, s = funcs[k](n, x)
				res[k].chunks = append(res[k].chunks, x)
				if s != want {
					res[k].ok = false
				}
			}
		})
	}
	wg.Wait()
	var idleMin, idleTotal time.Duration
	for i, c := range idle {
		d := time.Duration(<-c)
		if i == 0 || d < idleMin {
			idleMin = d
		}
		idleTotal += d
	}
	el := time.Since(t0).Seconds()
	fmt.Printf("cpu round=%d late1=%.6f late2=%.6f late3=%.6f process=%.6f idle-min=%.6f idle-total=%.6f\n", r,
		res[0].cpu.Seconds(), res[1].cpu.Seconds(), res[2].cpu.Seconds(), (cpuNow(true) - c0).Seconds(),
		idleMin.Seconds(), idleTotal.Seconds())
	ok := true
	tids := []string{}
	for k := 0; k < 3; k++ {
		ok = ok && res[k].ok && len(res[k].chunks) == k+1
		for c := 0; c <= k && c < len(res[k].chunks); c++ {
			ok = ok && res[k].chunks[c] == res[2].chunks[c]
		}
		tids = append(tids, strconv.Itoa(res[k].tid))
		if old[res[k].tid] {
			ok = false // no fresh thread after 64 tries
		}
	}
	word := "ok"
	if !ok {
		word = "MISMATCH"
	}
	fmt.Printf("round %d %s x=%x workers=%s elapsed=%.3f\n", r, word, res[2].chunks[len(res[2].chunks)-1],
		strings.Join(tids, ","), el)
	return ok
}

func main() {
	scale := flag.Float64("scale", 1.0, "size of the work unit (1.0: about 0.35 s of CPU)")
	threads := flag.Int("threads", 0, "idle OS threads to create at start")
	idleIters := flag.Int("idle-iters", 4_000_000, "iterations each idle thread spins per round")
	rounds := flag.Int("rounds", 1, "rounds before exiting")
	start := flag.Duration("start", 0, "start each round after this delay instead of on SIGUSR1")
	flag.DurationVar(&idleCPU, "idle-cpu", 0, "CPU time each idle thread spins at least per round")
	flag.Parse()
	if *scale <= 0 || *scale > 1000 || *threads < 0 || *threads > 5000 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "attach: bad flags")
		os.Exit(2)
	}
	n := int(*scale * unit)

	idle := make([]chan int, *threads)
	started := make(chan int)
	for i := range idle {
		idle[i] = make(chan int)
		go func(c chan int) {
			runtime.LockOSThread()
			started <- syscall.Gettid()
			for it := range c {
				c <- int(spinIdle(it))
			}
		}(idle[i])
	}
	idleTids := []string{}
	for range idle {
		idleTids = append(idleTids, strconv.Itoa(<-started))
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1)
	if len(idleTids) > 8 {
		idleTids = idleTids[:8]
	}
	fmt.Printf("ready pid=%d threads=%d idle=%s\n", os.Getpid(), len(threadIDs()), strings.Join(idleTids, ","))
	for r := 1; r <= *rounds; r++ {
		if *start > 0 {
			time.Sleep(*start)
		} else {
			<-sig
		}
		if !round(r, n, *idleIters, idle) {
			os.Exit(1)
		}
	}
}
