// Command shares is a profiler test fixture with a known answer.
//
// Four goroutines each run their own hot function, main.burn1 .. main.burn4,
// over the same loop body for 1, 2, 3 and 4 units of work, then the program
// exits.  The loops neither allocate nor make system calls, so the CPU time
// of the process splits 10/20/30/40 % between the four functions (plus a
// fraction of a percent of runtime start-up).  -scale sets the size of the
// work unit: at 1.0 the whole run takes about 3.5 s of CPU on a 2013-2023
// x86-64 core.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
)

// iterations of the loop body in one unit of work at -scale 1
const unit = 200_000_000

var sink [5]uint64

// The four bodies are identical on purpose: equal cost per iteration, so the
// iteration counts alone fix the shares.

//go:noinline
func burn1(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func burn2(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func burn3(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func burn4(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func main() {
	scale := flag.Float64("scale", 1.0, "size of the work unit (1.0: about 3.5 s of CPU)")
	flag.Parse()
	if *scale <= 0 || *scale > 1000 {
		fmt.Fprintln(os.Stderr, "shares: -scale must be in (0, 1000]")
		os.Exit(2)
	}
	n := int(*scale * unit)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { sink[1] = burn1(1 * n); wg.Done() }()
	go func() { sink[2] = burn2(2 * n); wg.Done() }()
	go func() { sink[3] = burn3(3 * n); wg.Done() }()
	go func() { sink[4] = burn4(4 * n); wg.Done() }()
	wg.Wait()
}
