// Command alloc is a profiler test fixture with a known answer for
// allocation profiles: known sizes at known stacks under known pprof
// labels, by goroutines started through one helper from two call sites.
//
// main.siteA and main.siteB each start a worker through the one helper
// main.spawn (go statement), under the label tenant=a or tenant=b
// (pprof.Do).  Each worker allocates objects of sizes that are exactly
// the runtime's size classes, each size in a function of its own:
//
//	tenant a (siteA): main.small 4*N x 48 B, main.page 3*N/10 x 4 KiB
//	tenant b (siteB): main.small 2*N x 48 B, main.big N/10 x 64 KiB
//
// and keeps none of them.  -rate R sets runtime.MemProfileRate = R first
// thing in main (0: the runtime's default, 512 KiB); at rate 1 every
// allocation is sampled, so the counts are exact.  -pace P sleeps a
// millisecond every P rounds (a profiler that drains each sample keeps
// up).  -linger D keeps the workers alive D after their work (a profiler
// that reads a goroutine's labels late still finds it).  -delay waits before the
// work (for a profiler to attach), allocating 64 B a millisecond in
// main.idle; -usr1 waits so (after -delay) until a SIGUSR1 comes; -prof FILE writes the program's own
// allocs profile at the end, after a GC (the runtime publishes its records
// at the end of a cycle); -heap FILE its heap profile so.  -keep K keeps
// every K-th object of each function alive to the end (the live heap),
// ("kept FUNC TENANT OBJECTS BYTES"), and -hold D waits D after the
// profiles are written ("profiles written" on stdout), allocating
// nothing, with those objects still alive.
//
// Truth, printed at the end, one line per function and tenant:
// "truth FUNC TENANT CREATOR OBJECTS BYTES".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

var (
	rate    = flag.Int("rate", 1, "runtime.MemProfileRate (0: the default)")
	n       = flag.Int("n", 10000, "scale of the allocations")
	delay   = flag.Duration("delay", 0, "wait before allocating")
	usr1    = flag.Bool("usr1", false, "wait for SIGUSR1 before allocating (after -delay)")
	prof    = flag.String("prof", "", "write the program's own allocs profile here at the end")
	linger  = flag.Duration("linger", 0, "workers stay alive this long after their work")
	release = make(chan struct{})
	pace    = flag.Int("pace", 0, "sleep a millisecond after every PACE rounds (0: never)")
	heap    = flag.String("heap", "", "write the program's own heap profile here at the end")
	keep    = flag.Int("keep", 0, "keep every KEEP-th object of each function alive (0: none)")
	hold    = flag.Duration("hold", 0, "wait this long after writing the profiles")
	kept    [][][]byte
	sink    []byte
	mu      sync.Mutex
)

//go:noinline
func small() []byte { b := make([]byte, 48); sink = b; return b }

//go:noinline
func page() []byte { b := make([]byte, 4096); sink = b; return b }

//go:noinline
func big() []byte { b := make([]byte, 65536); sink = b; return b }

// idle allocates a little every millisecond while the program waits, as a
// server does between requests.
//
//go:noinline
func idle() {
	sink = make([]byte, 64)
	time.Sleep(time.Millisecond)
}

type job struct {
	fn    func() []byte
	name  string
	count int
	size  int
}

func work(jobs []job) {
	var keepers [][]byte
	if *keep > 0 {
		n := 0
		for _, j := range jobs {
			n += j.count / *keep + 1
		}
		keepers = make([][]byte, 0, n)
	}
	for i := 0; ; i++ {
		done := true
		for _, j := range jobs {
			if i < j.count {
				b := j.fn()
				if *keep > 0 && i%*keep == 0 {
					keepers = append(keepers, b)
				}
				done = false
			}
		}
		if done {
			mu.Lock()
			kept = append(kept, keepers)
			mu.Unlock()
			return
		}
		if *pace > 0 && i%*pace == *pace-1 {
			time.Sleep(time.Millisecond)
		}
	}
}

// spawn starts work(jobs) in a goroutine under the label tenant=TENANT:
// the one helper of both call sites.
func spawn(wg *sync.WaitGroup, tenant string, jobs []job) {
	wg.Add(1)
	go func() {
		pprof.Do(context.Background(), pprof.Labels("tenant", tenant), func(context.Context) {
			work(jobs)
		})
		wg.Done()
		<-release
	}()
}

//go:noinline
func siteA(wg *sync.WaitGroup) []job {
	jobs := []job{{small, "main.small", 4 * *n, 48}, {page, "main.page", 3 * *n / 10, 4096}}
	spawn(wg, "a", jobs)
	return jobs
}

//go:noinline
func siteB(wg *sync.WaitGroup) []job {
	jobs := []job{{small, "main.small", 2 * *n, 48}, {big, "main.big", *n / 10, 65536}}
	spawn(wg, "b", jobs)
	return jobs
}

func main() {
	flag.Parse()
	if *rate > 0 {
		runtime.MemProfileRate = *rate
	}
	start := make(chan os.Signal, 1)
	signal.Notify(start, syscall.SIGUSR1)
	for t0 := time.Now(); time.Since(t0) < *delay; {
		idle()
	}
	for *usr1 && len(start) == 0 {
		idle()
	}
	var wg sync.WaitGroup
	a := siteA(&wg)
	b := siteB(&wg)
	wg.Wait()
	time.Sleep(*linger)
	close(release)
	for _, j := range a {
		fmt.Printf("truth %s a main.siteA %d %d\n", j.name, j.count, j.count*j.size)
	}
	for _, j := range b {
		fmt.Printf("truth %s b main.siteB %d %d\n", j.name, j.count, j.count*j.size)
	}
	if *keep > 0 {
		for i, j := range append(a, b...) {
			k := (j.count + *keep - 1) / *keep
			fmt.Printf("kept %s %s %d %d\n", j.name, map[bool]string{true: "a", false: "b"}[i < len(a)], k, k*j.size)
		}
	}
	sink = nil // the last object made, not kept
	if *prof != "" || *heap != "" {
		runtime.GC()
	}
	for _, w := range []struct{ file, name string }{{*prof, "allocs"}, {*heap, "heap"}} {
		if w.file == "" {
			continue
		}
		f, err := os.Create(w.file)
		if err == nil {
			err = pprof.Lookup(w.name).WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *hold > 0 {
		fmt.Println("profiles written")
		time.Sleep(*hold)
	}
	runtime.KeepAlive(kept)
}
