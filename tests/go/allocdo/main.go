// Command allocdo is a profiler test fixture: a program whose linker turns
// the runtime's heap sampling off (it uses runtime/pprof for its labels
// alone, pprof.Do, never the heap profile), that allocates known bytes at
// known places from the first line of main.
//
// main.earlyAlloc, first in main: -early objects of 64 KiB.  After -delay, two
// goroutines, each under its label for its whole life (pprof.Do), -n
// rounds of 2 KiB objects (a millisecond's sleep every -pace rounds):
// tenant=a 12 in main.funcA and 3 in main.funcB a round, tenant=b 3 and 2;
// so of the bytes: funcA/a 60 %, funcA/b 15 %, funcB/a 15 %, funcB/b 10 %,
// 75 % / 25 % both by function and by label.  Each lingers -linger under
// its label before it ends.  It prints its truth, "truth FUNC TENANT
// OBJECTS BYTES" per part, and "rate R", the runtime.MemProfileRate that
// main.main started with.
package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

const size = 2048

var (
	n      = flag.Int("n", 4000, "rounds (20 objects of 2 KiB each)")
	early  = flag.Int("early", 32, "objects of 64 KiB allocated first in main")
	delay  = flag.Duration("delay", 0, "wait after main.earlyAlloc, before the workers start")
	pace   = flag.Int("pace", 20, "sleep a millisecond after every PACE rounds (0: never)")
	linger = flag.Duration("linger", 100*time.Millisecond, "each worker's wait before it ends")
	sink   []byte
	keep   [][]byte
)

//go:noinline
func earlyAlloc(k int) {
	for i := 0; i < k; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
	keep = nil
}

//go:noinline
func funcA(k int) {
	for i := 0; i < k; i++ {
		sink = make([]byte, size)
	}
}

//go:noinline
func funcB(k int) {
	for i := 0; i < k; i++ {
		sink = make([]byte, size)
	}
}

// worker: -n rounds of ka objects in funcA and kb in funcB, under tenant=t.
func worker(wg *sync.WaitGroup, t string, ka, kb int) {
	defer wg.Done()
	pprof.Do(context.Background(), pprof.Labels("tenant", t), func(context.Context) {
		for i := 0; i < *n; i++ {
			funcA(ka)
			funcB(kb)
			if *pace > 0 && i%*pace == *pace-1 {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(*linger)
	})
}

func main() {
	rate := runtime.MemProfileRate
	flag.Parse()
	earlyAlloc(*early)
	time.Sleep(*delay)
	var wg sync.WaitGroup
	wg.Add(2)
	go worker(&wg, "a", 12, 3)
	go worker(&wg, "b", 3, 2)
	wg.Wait()
	fmt.Println("truth main.earlyAlloc -", *early, *early*(64<<10))
	for _, p := range []struct {
		f, t string
		k    int
	}{{"main.funcA", "a", 12}, {"main.funcA", "b", 3}, {"main.funcB", "a", 3}, {"main.funcB", "b", 2}} {
		fmt.Println("truth", p.f, p.t, p.k**n, p.k**n*size)
	}
	fmt.Println("rate", rate)
}
