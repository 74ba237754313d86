// Command creators is a profiler test fixture with a known answer for
// goroutine-aware profiles.
//
// Two listeners, "http" and "grpc", each start a goroutine per request
// (main.httpListener -> go main.serveHTTP, main.grpcListener -> go
// main.serveGRPC).  Both request goroutines run the same handler,
// main.handle, under pprof labels handler=checkout (http) or
// handler=search (grpc); main.handle starts its worker through one helper,
// main.spawn (go f()), and the worker burns CPU in main.work.  Per round,
// http gets 7 requests and grpc 3 of equal size, so main.work's CPU splits
// 70/30 between the two listeners (and the two label values); the go
// statement that made each worker is the same for both.
//
// Three call sites of a second helper, main.Go, start main.helperWork with
// work 1:2:3 when -helper is given (instead of the listeners).
//
// Each worker prints "worker goid=N path=P" with its own goroutine id (from
// runtime.Stack) when -ids is given.  The program runs rounds until
// -duration has passed (at least one round).
//
// With -truth, the program keeps its own accounting of the work done for
// each creator, in loop iterations of main.work (counted every 2^20, as
// they are done), and prints it as "truth http=N grpc=N site1=N site2=N
// site3=N" when it gets SIGUSR1 and when it ends: the known answer of a
// profile of the whole run, or of the window between two SIGUSR1.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	unit     = flag.Int("unit", 60_000_000, "loop iterations in one unit of work")
	duration = flag.Duration("duration", 3*time.Second, "run rounds for this long")
	ids      = flag.Bool("ids", false, "print each worker's goroutine id")
	helper   = flag.Bool("helper", false, "run the one-helper scenario")
	truth    = flag.Bool("truth", false, "print the work done per creator on SIGUSR1 and at the end")
	outMu    sync.Mutex
	sink     [8]uint64
)

func goid() int64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	f := bytes.Fields(b[:n])
	if len(f) < 2 {
		return -1
	}
	id, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return id
}

// the work done per creator, in iterations of work's loop
var done struct{ http, grpc, site1, site2, site3 int64 }

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
	fmt.Printf("truth http=%d grpc=%d site1=%d site2=%d site3=%d\n", atomic.LoadInt64(&done.http),
		atomic.LoadInt64(&done.grpc), atomic.LoadInt64(&done.site1), atomic.LoadInt64(&done.site2),
		atomic.LoadInt64(&done.site3))
	outMu.Unlock()
}

// spawn starts f on a new goroutine: the one go statement of every worker.
//
//go:noinline
func spawn(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
}

//go:noinline
func handle(path string, wg *sync.WaitGroup) {
	acct := &done.http
	if path == "grpc" {
		acct = &done.grpc
	}
	spawn(wg, func() {
		if *ids {
			id := goid()
			outMu.Lock()
			fmt.Printf("worker goid=%d path=%s\n", id, path)
			outMu.Unlock()
		}
		sink[0] += work(*unit, acct)
	})
}

//go:noinline
func serveHTTP(wg *sync.WaitGroup) {
	defer wg.Done()
	pprof.Do(context.Background(), pprof.Labels("handler", "checkout"), func(context.Context) {
		handle("http", wg)
	})
}

//go:noinline
func serveGRPC(wg *sync.WaitGroup) {
	defer wg.Done()
	pprof.Do(context.Background(), pprof.Labels("handler", "search"), func(context.Context) {
		handle("grpc", wg)
	})
}

//go:noinline
func httpListener(n int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go serveHTTP(wg)
	}
}

//go:noinline
func grpcListener(n int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go serveGRPC(wg)
	}
}

// Go is the one helper every goroutine of the -helper scenario starts through.
//
//go:noinline
func Go(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
}

//go:noinline
func helperWork(k int, acct *int64) { sink[1] += work(k * *unit, acct) }

//go:noinline
func site1(wg *sync.WaitGroup) { Go(wg, func() { helperWork(1, &done.site1) }) }

//go:noinline
func site2(wg *sync.WaitGroup) { Go(wg, func() { helperWork(2, &done.site2) }) }

//go:noinline
func site3(wg *sync.WaitGroup) { Go(wg, func() { helperWork(3, &done.site3) }) }

func main() {
	flag.Parse()
	if *truth {
		c := make(chan os.Signal, 4)
		signal.Notify(c, syscall.SIGUSR1)
		go func() {
			for range c {
				printTruth()
			}
		}()
	}
	start := time.Now()
	for round := 0; round == 0 || time.Since(start) < *duration; round++ {
		var wg sync.WaitGroup
		if *helper {
			site1(&wg)
			site2(&wg)
			site3(&wg)
		} else {
			wg.Add(2)
			go httpListener(7, &wg)
			go grpcListener(3, &wg)
		}
		wg.Wait()
	}
	if *truth {
		printTruth()
	}
	if sink[0] == 42 {
		fmt.Fprintln(os.Stderr, "unlikely")
	}
}
