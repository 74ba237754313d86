// Command benchcpu is the CPU-bound benchmark of scripts/bench.sh: two
// goroutines (on a 2-core machine, both cores busy) each run a fixed amount
// of work in main.spin, so its elapsed time measures what a profiler costs
// the target.  It prints one line:
//
//	benchcpu ok x=HEX elapsed=SECONDS
//
// -scale sets the work (1.0: about 1 s of CPU per goroutine on a 2015-2023
// x86-64 core).  The loop neither allocates nor makes system calls.
package main

import (
	"flag"
	"fmt"
	"sync"
	"time"
)

const unit = 400_000_000

//go:noinline
func spin(n int, x uint64) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// work splits the loop into calls of a fixed size, so each sample's stack is
// main.work -> main.spin under the goroutine's root.
//
//go:noinline
func work(n int, seed uint64) uint64 {
	x := seed
	for n > 0 {
		k := 1_000_000
		if k > n {
			k = n
		}
		x = spin(k, x)
		n -= k
	}
	return x
}

func main() {
	scale := flag.Float64("scale", 1, "work per goroutine in units of ~1 s of CPU")
	gs := flag.Int("goroutines", 2, "busy goroutines")
	flag.Parse()
	n := int(float64(unit) * *scale)
	start := time.Now()
	res := make([]uint64, *gs)
	var wg sync.WaitGroup
	for g := 0; g < *gs; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			res[g] = work(n, uint64(g)+1)
		}(g)
	}
	wg.Wait()
	var x uint64
	for _, r := range res {
		x ^= r
	}
	fmt.Printf("benchcpu ok x=%x elapsed=%.4f\n", x, time.Since(start).Seconds())
}
