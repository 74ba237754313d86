// Command benchalloc is a benchmark fixture for allocation profiling: it
// allocates -mb megabytes in objects of 16 B to 32 KiB (a fixed mix: the
// small size classes a server allocates most, and some larger ones), on
// -workers goroutines, keeping none, and prints the time it took and the
// CPU time the process used meanwhile (user + system):
//
//	benchalloc: N MB in D ns: R MB/s, cpu C ns
//
// -rate R allocates at R MB/s on a schedule (1 ms slots), not as fast as
// it can.  -heapprof D reads the runtime's own heap profile every D while it
// works (pprof.Lookup("allocs").WriteTo, to io.Discard), as a program that
// serves net/http/pprof to a scraper does.  The runtime's heap sampling is
// on in every case (the program uses runtime/pprof).
package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

// cpu: the process's CPU time so far (user + system: a probe's trap is the
// system time of the thread that hit it).
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var (
	mb       = flag.Int("mb", 2000, "megabytes to allocate")
	workers  = flag.Int("workers", 2, "allocating goroutines")
	heapprof = flag.Duration("heapprof", 0, "read the runtime's heap profile this often (0: never)")
	wait     = flag.Duration("wait", 0, "wait before the work (for a profiler to attach)")
	rate     = flag.Int("rate", 0, "MB/s to allocate at, on a schedule of 1 ms slots (0: as fast as it can)")
	sink     [64][]byte
)

var sizes = []int{16, 32, 48, 64, 96, 128, 256, 512, 1024, 4096, 8192, 32768}

//go:noinline
func alloc(i int, n int) { sink[i%64] = make([]byte, n) }

// work allocates bytes; with -rate, each worker its share of a slot's bytes
// a millisecond, ahead of the schedule sleeping, behind it catching up: the
// bytes a second do not depend on how long an allocation takes (a profiler
// that slows some of them takes no allocation away).
func work(w int, bytes int64) {
	var done, slot, slotEnd int64
	next := time.Now()
	if *rate > 0 {
		slot = int64(*rate) << 20 / 1000 / int64(*workers)
		slotEnd = slot
	}
	for i := 0; done < bytes; i++ {
		n := sizes[i%len(sizes)]
		if i%len(sizes) >= 9 && i%7 != 0 { // the large ones less often
			n = sizes[i%3]
		}
		alloc(w*8+i, n)
		done += int64(n)
		if slot > 0 && done >= slotEnd {
			slotEnd += slot
			next = next.Add(time.Millisecond)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

func main() {
	flag.Parse()
	time.Sleep(*wait)
	stop := make(chan struct{})
	if *heapprof > 0 {
		go func() {
			t := time.NewTicker(*heapprof)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					pprof.Lookup("allocs").WriteTo(io.Discard, 0)
				}
			}
		}()
	}
	c0 := cpu()
	t0 := time.Now()
	var wg sync.WaitGroup
	per := int64(*mb) << 20 / int64(*workers)
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			work(w, per)
		}(w)
	}
	wg.Wait()
	d := time.Since(t0)
	c := cpu() - c0
	close(stop)
	fmt.Printf("benchalloc: %d MB in %d ns: %.0f MB/s, cpu %d ns\n", *mb, d.Nanoseconds(), float64(*mb)/d.Seconds(), c.Nanoseconds())
}
