// spawn: the cost of creating goroutines, for scripts/bench-creators.sh.
//
// After -wait (time for a profiler to attach), four creator goroutines
// each start -n/4 goroutines, through two levels of calls, that each do a
// little work; the program prints the nanoseconds per goroutine created
// and run, measured from the end of the wait.
package main

import (
	"flag"
	"fmt"
	"sync"
	"time"
)

var sink [64]uint64

//go:noinline
func work(k int, n int) {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
	}
	sink[k*8] += x
}

//go:noinline
func spawnOne(k int, wg *sync.WaitGroup, n int) {
	wg.Add(1)
	go func() {
		work(k, n)
		wg.Done()
	}()
}

//go:noinline
func creator(k, count, n int, done *sync.WaitGroup) {
	defer done.Done()
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		spawnOne(k, &wg, n)
		if i%64 == 63 {
			wg.Wait()
		}
	}
	wg.Wait()
}

func main() {
	total := flag.Int("n", 400000, "goroutines to create")
	n := flag.Int("work", 200, "loop iterations in each goroutine")
	wait := flag.Duration("wait", 0, "sleep this long before starting")
	flag.Parse()
	time.Sleep(*wait)
	start := time.Now()
	var done sync.WaitGroup
	for k := 0; k < 4; k++ {
		done.Add(1)
		go creator(k, *total/4, *n, &done)
	}
	done.Wait()
	el := time.Since(start)
	fmt.Printf("spawn: %d goroutines in %.3f s: %.0f ns each\n", *total, el.Seconds(),
		float64(el.Nanoseconds())/float64(*total))
}
