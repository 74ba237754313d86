// wallbench: the target of scripts/bench-wall.sh (a module of its own:
// it imports fgprof, fetched through the module proxy).  Usage:
//
//	wallbench G PHASE:SECS...
//
// G goroutines wait (nine in ten in a channel receive for good, one in
// ten in a 100 ms time.Sleep loop) while one worker per CPU does fixed
// units of work.  The phases run in order: "none" and "ext" (the script
// attaches a profiler from outside) only print, "fgprof" runs fgprof
// inside (its fixed 99 Hz).  It prints "phase NAME MS" when a phase
// begins and, every 250 ms, "ops MS N": the units done in the 250 ms
// ending MS ms after the start, its own measure of how fast it runs.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/felixge/fgprof"
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
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: wallbench G PHASE:SECS...")
		os.Exit(2)
	}
	g, _ := strconv.Atoi(os.Args[1])
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
	ms := func() int64 { return time.Since(start).Milliseconds() }
	done := make(chan bool)
	go func() {
		last := int64(0)
		t := time.NewTicker(250 * time.Millisecond)
		for {
			select {
			case <-t.C:
				n := atomic.LoadInt64(&ops)
				fmt.Printf("ops %d %d\n", ms(), n-last)
				last = n
			case <-done:
				return
			}
		}
	}()
	for _, ph := range os.Args[2:] {
		name, secs, _ := strings.Cut(ph, ":")
		d, _ := strconv.ParseFloat(secs, 64)
		fmt.Printf("phase %s %d\n", name, ms())
		var stop func() error
		if name == "fgprof" {
			stop = fgprof.Start(io.Discard, fgprof.FormatPprof)
		}
		time.Sleep(time.Duration(d * float64(time.Second)))
		if stop != nil {
			stop()
		}
	}
	fmt.Printf("phase end %d\n", ms())
	close(done)
}
