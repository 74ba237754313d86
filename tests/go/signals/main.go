// Command signals is a profiler test fixture for samples in Go's own
// signal handler: the runtime's CPU profiler at a high rate makes every
// SIGPROF walk the interrupted goroutine's stack in runtime.sigprof,
// under sighandler <- sigtrampgo <- sigtramp, while the only busy
// goroutines (two) run main.spin.  So a sample under runtime.sigtramp
// interrupted main.spin (or what it calls), and the stack goes on
// through the kernel's signal frame into it, to runtime.goexit.
package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"time"
)

//go:noinline
func deeper(n int, x uint64) uint64 {
	if n == 0 {
		for i := 0; i < 100000; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		return x
	}
	return deeper(n-1, x) + 1
}

//go:noinline
func spin(until time.Time) uint64 {
	x := uint64(1)
	for time.Now().Before(until) {
		x = deeper(40, x)
	}
	return x
}

func main() {
	dur := flag.Duration("duration", 2*time.Second, "how long")
	flag.Parse()
	// a rate above pprof's 100 Hz: set first, StartCPUProfile then warns and keeps it
	runtime.SetCPUProfileRate(5000)
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		fmt.Println("profile:", err)
	}
	// two spinners: each thread has its own SIGPROF timer, so twice the
	// handler time (a timer fires at most once a kernel tick)
	done := make(chan uint64)
	until := time.Now().Add(*dur)
	for i := 0; i < 2; i++ {
		go func() { done <- spin(until) }()
	}
	x := <-done
	x += <-done
	pprof.StopCPUProfile()
	fmt.Println(x != 0)
}
