// Command errgroup is a profiler test fixture with a known answer for
// goroutine creators, as Go users ask of errgroup (golang/go#32223:
// "everything gets rooted back to errgroup.Go, and I want to see which
// particular usages of errgroup are expensive").
//
// Three call sites, main.site1..3, start the same task through
// golang.org/x/sync/errgroup's (*Group).Go with work 1:2:3 per round.  The
// task is one closure made by main.task for all three, so the goroutines'
// own stacks are the same (errgroup.(*Group).Go.func1 -> main.task.func1 ->
// main.work): only the stacks that created them tell the call sites apart.
//
// The program keeps its own accounting of the work done for each call site,
// in loop iterations of main.work (counted every 2^20, as they are done),
// and prints it as "truth site1=N site2=N site3=N" when it gets SIGUSR1 and
// when it ends: the known answer of a profile of the whole run, or of the
// window between two SIGUSR1.  It runs rounds until -duration has passed
// (at least one round).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

var (
	unit     = flag.Int("unit", 20_000_000, "loop iterations in one unit of work")
	duration = flag.Duration("duration", 3*time.Second, "run rounds for this long")
	outMu    sync.Mutex
	sink     [4]uint64
	// the work done per call site, in iterations of work's loop
	done struct{ site1, site2, site3 int64 }
)

const chunk = 1 << 20

//go:noinline
func work(n int, acct *int64) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if i&(chunk-1) == chunk-1 {
			atomic.AddInt64(acct, chunk)
		}
	}
	atomic.AddInt64(acct, int64(n%chunk))
	return x
}

func printTruth() {
	outMu.Lock()
	fmt.Printf("truth site1=%d site2=%d site3=%d\n", atomic.LoadInt64(&done.site1),
		atomic.LoadInt64(&done.site2), atomic.LoadInt64(&done.site3))
	outMu.Unlock()
}

// task returns the one function every call site gives errgroup: k units of
// work, accounted to acct.
//
//go:noinline
func task(k int, acct *int64, slot int) func() error {
	return func() error {
		sink[slot] += work(k**unit, acct)
		return nil
	}
}

//go:noinline
func site1(g *errgroup.Group) { g.Go(task(1, &done.site1, 1)) }

//go:noinline
func site2(g *errgroup.Group) { g.Go(task(2, &done.site2, 2)) }

//go:noinline
func site3(g *errgroup.Group) { g.Go(task(3, &done.site3, 3)) }

func main() {
	flag.Parse()
	c := make(chan os.Signal, 4)
	signal.Notify(c, syscall.SIGUSR1)
	go func() {
		for range c {
			printTruth()
		}
	}()
	start := time.Now()
	for round := 0; round == 0 || time.Since(start) < *duration; round++ {
		g, _ := errgroup.WithContext(context.Background())
		site1(g)
		site2(g)
		site3(g)
		if err := g.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, "errgroup:", err)
			os.Exit(1)
		}
	}
	printTruth()
	if sink[0] == 42 {
		fmt.Fprintln(os.Stderr, "unlikely")
	}
}
