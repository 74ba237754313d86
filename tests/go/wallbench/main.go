// wallbench: a target for scripts/bench-wall.sh.  Usage:
//
//	wallbench G SECS
//
// G goroutines wait (nine in ten on a channel receive for good, one in ten
// in a 100 ms time.Sleep loop) while one worker per CPU does fixed units
// of work; every 250 ms it prints "ops T N": N units done in the 250 ms
// ending at T (ms since start), its own measure of how fast it runs.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

var ops int64

//go:noinline
func parked(c chan int) { <-c }

//go:noinline
func napper() {
	for {
		time.Sleep(100 * time.Millisecond)
	}
}

//go:noinline
func unit(x uint64) uint64 {
	for i := 0; i < 20000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

func worker() {
	x := uint64(1)
	for {
		x = unit(x)
		atomic.AddInt64(&ops, 1)
	}
}

func main() {
	g, _ := strconv.Atoi(os.Args[1])
	secs, _ := strconv.ParseFloat(os.Args[2], 64)
	c := make(chan int)
	for i := 0; i < g; i++ {
		if i%10 == 9 {
			go napper()
		} else {
			go parked(c)
		}
	}
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		go worker()
	}
	start := time.Now()
	fmt.Printf("ready %d\n", g)
	last := int64(0)
	for time.Since(start).Seconds() < secs {
		time.Sleep(250 * time.Millisecond)
		n := atomic.LoadInt64(&ops)
		fmt.Printf("ops %d %d\n", time.Since(start).Milliseconds(), n-last)
		last = n
	}
}
