// Command gcids is a profiler test fixture for the goroutine ids of
// samples on the system stack: many short-lived goroutines under GC
// pressure, so that threads switch to g0 often (GC assists and span
// allocations through runtime.systemstack, stack growth through
// runtime.morestack, the GC's own mark workers) and run other goroutines
// right after.
//
// Each goroutine starts at a function of its own kind, and runs nothing
// else at its root:
//
//	main.alloc  short-lived: small objects kept a while in a ring (the GC's
//	            assists) and a large one (a span from the heap, on g0)
//	main.grow   short-lived: deep recursion with big frames (morestack,
//	            newstack, copystack on g0)
//	main.spin   long-lived (through a closure): CPU with a little garbage, so that an m that
//	            ran a GC worker or a short goroutine at a sample runs
//	            another goroutine when the sample is read
//
// A sample's goroutine id is right only if every sample with that id
// starts at the same function (runtime.goexit's caller): a goroutine
// never runs another start function.  Truth printed at the end: "created
// N" (goroutines started) and "gcs N" (GC cycles completed).
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var (
	duration = flag.Duration("duration", 3*time.Second, "how long")
	inflight = flag.Int("inflight", 8, "short-lived goroutines at once")

	created atomic.Int64
	ringMu  sync.Mutex
	ring    [4096][]byte
	ringAt  int
	sinkBig []byte
	sinkN   atomic.Int64
)

//go:noinline
func keep(b []byte) {
	ringMu.Lock()
	ring[ringAt%len(ring)] = b
	ringAt++
	ringMu.Unlock()
}

//go:noinline
func alloc(n int, done chan<- struct{}) {
	for i := 0; i < n; i++ {
		keep(make([]byte, 64+i%512))
	}
	ringMu.Lock()
	sinkBig = make([]byte, 256<<10)
	ringMu.Unlock()
	done <- struct{}{}
}

//go:noinline
func recurse(n int, pad [512]byte) int {
	if n == 0 {
		return int(pad[0])
	}
	pad[n%512]++
	return recurse(n-1, pad) + 1
}

//go:noinline
func grow(depth int, done chan<- struct{}) {
	sinkN.Add(int64(recurse(depth, [512]byte{})))
	done <- struct{}{}
}

//go:noinline
func spin(until time.Time) {
	x := uint64(1)
	for time.Now().Before(until) {
		for i := 0; i < 20000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if x&7 == 0 {
			keep(make([]byte, 128))
		}
	}
	sinkN.Add(int64(x & 1))
}

func main() {
	flag.Parse()
	until := time.Now().Add(*duration)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); spin(until) }()
	}
	done := make(chan struct{}, *inflight)
	running := 0
	for k := 0; time.Now().Before(until); k++ {
		for running >= *inflight {
			<-done
			running--
		}
		if k%2 == 0 {
			go alloc(2000, done)
		} else {
			go grow(200, done)
		}
		created.Add(1)
		running++
	}
	for ; running > 0; running-- {
		<-done
	}
	wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Println("created", created.Load())
	fmt.Println("gcs", ms.NumGC)
}
