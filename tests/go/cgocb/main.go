// Command cgocb is a profiler test fixture for Go called back from C: a
// goroutine calls the C function cwork, which calls the exported Go
// function goBurn, which burns CPU in main.burnLoop.  The hot stack is one
// stack Go -> C -> Go:
//
//	runtime.goexit <- main.worker <- main._Cfunc_cwork <- runtime.cgocall <-
//	runtime.asmcgocall <- (C) cwork <- crosscall2 <- runtime.cgocallback <-
//	... <- main.goBurn <- main.burnLoop
package main

// #include <stdint.h>
// uint64_t cwork(long n);
import "C"

import (
	"flag"
	"fmt"
	"time"
)

//go:noinline
func burnLoop(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//export goBurn
func goBurn(n C.long) C.uint64_t {
	return C.uint64_t(burnLoop(uint64(n)|1, int(n)))
}

//go:noinline
func worker(n int, done chan<- uint64) {
	done <- uint64(C.cwork(C.long(n)))
}

func main() {
	scale := flag.Float64("scale", 1, "work scale")
	flag.Parse()
	done := make(chan uint64)
	go worker(int(*scale*600_000_000), done)
	fmt.Println(<-done != 0)
	// Stay a moment: the crossing of cgocallback reads g0's saved state from
	// the process, and samples drained after it exited cannot (they end
	// [truncated], honestly); how many are left then is the drain's latency
	// on a loaded machine (12 % once), not the unwinder's.
	time.Sleep(300 * time.Millisecond)
}
