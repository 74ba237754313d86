// Command shortlived is a profiler test fixture with a known answer for
// the creators of short-lived goroutines, the shape of a server that starts
// a goroutine per request.
//
// A feeder hands requests to two listeners, 7 of every 10 to listenerA and
// 3 to listenerB.  Each listener starts a goroutine per request, and the
// goroutine burns -work loop iterations (~1 ms here) and ends:
//
//	-shape helper   both listeners through one shared helper: spawn(r) -> go handle(r)
//	-shape direct   each listener with a go statement of its own
//	-shape limit    as helper, at most 4 requests in flight per listener
//	-shape levels   three levels, each goroutine short: listener -> go handle ->
//	                2 x go sub -> go leaf, and the leaves burn the CPU
//	-shape stress   as helper with -work small: thousands of goroutines a second
//
// The work of a goroutine is done in a function named for the listener that
// made it (main.burnA, main.burnB): a sample in main.burnA was run for a
// goroutine listenerA made, whatever a profiler says its creator was.  A
// background goroutine (main.background) burns CPU all along, and the GC
// runs (each request allocates; -garbage N: N bytes of small objects it
// keeps a while, for GC work on the system stack).
//
// Truth, printed at the end: "truth A=N B=N" (iterations burned for each
// listener, counted as done), "created N" (goroutines started), and with
// -phase D, the requests of the first and of the last D burn in
// main.burnFirst and main.burnLast instead (a profile's two windows); with
// -goids FILE, one line per request goroutine "A goid" / "B goid" with the
// goroutine id it read of itself (runtime.Stack).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var (
	shape    = flag.String("shape", "helper", "helper, direct, limit, levels or stress")
	work     = flag.Int("work", 400_000, "loop iterations of one request")
	duration = flag.Duration("duration", 3*time.Second, "feed requests for this long")
	rate     = flag.Int("rate", 1000, "requests per second")
	goidFile = flag.String("goids", "", "write each request goroutine's id here")
	garbage  = flag.Int("garbage", 0, "bytes of small objects each request allocates and keeps a while")
	phase    = flag.Duration("phase", 0, "requests of the first and the last PHASE burn in main.burnFirst, main.burnLast")
	t0       time.Time

	doneA, doneB, created atomic.Int64
	sink                  [4]uint64
	idMu                  sync.Mutex
	idsA, idsB            []int64
)

type request struct {
	a    bool
	work int
	wg   *sync.WaitGroup
	sem  chan struct{}
}

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

func note(a bool) {
	if *goidFile == "" {
		return
	}
	id := goid()
	idMu.Lock()
	if a {
		idsA = append(idsA, id)
	} else {
		idsB = append(idsB, id)
	}
	idMu.Unlock()
}

func spin(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var (
	keepMu sync.Mutex
	keep   [512][]*[8]uintptr
	keepI  int
)

// litter allocates -garbage bytes of pointerful objects and keeps them for
// the next 511 requests: the GC marks them (its workers and the requests'
// assists run on the system stack).
func litter() {
	if *garbage < 64 {
		return
	}
	s := make([]*[8]uintptr, *garbage/64)
	for i := range s {
		s[i] = new([8]uintptr)
	}
	keepMu.Lock()
	keep[keepI%len(keep)] = s
	keepI++
	keepMu.Unlock()
}

//go:noinline
func burnA(n int) { litter(); sink[0] += spin(n); doneA.Add(int64(n)) }

//go:noinline
func burnB(n int) { litter(); sink[1] += spin(n); doneB.Add(int64(n)) }

//go:noinline
func burnFirst(n int) { sink[3] += spin(n) }

//go:noinline
func burnLast(n int) { sink[3] += spin(n) }

func burn(r *request, n int) {
	if *phase > 0 {
		if e := time.Since(t0); e < *phase {
			burnFirst(n)
			return
		} else if e > *duration-*phase {
			burnLast(n)
			return
		}
	}
	if r.a {
		burnA(n)
	} else {
		burnB(n)
	}
}

//go:noinline
func handle(r *request) {
	defer r.wg.Done()
	if r.sem != nil {
		defer func() { <-r.sem }()
	}
	note(r.a)
	b := make([]byte, 4096) // garbage: the GC runs while requests come and go
	b[0] = 1
	if *shape == "levels" {
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			created.Add(1)
			go sub(r, &wg)
		}
		wg.Wait()
		return
	}
	burn(r, r.work)
}

//go:noinline
func sub(r *request, wg *sync.WaitGroup) {
	defer wg.Done()
	var lw sync.WaitGroup
	lw.Add(1)
	created.Add(1)
	go leaf(r, &lw)
	lw.Wait()
}

//go:noinline
func leaf(r *request, wg *sync.WaitGroup) {
	defer wg.Done()
	burn(r, r.work/2)
}

//go:noinline
func spawn(r *request) {
	created.Add(1)
	go handle(r)
}

//go:noinline
func listenerA(ch chan *request) {
	for r := range ch {
		if r.sem != nil {
			r.sem <- struct{}{}
		}
		if *shape == "direct" {
			created.Add(1)
			go handle(r)
		} else {
			spawn(r)
		}
	}
}

//go:noinline
func listenerB(ch chan *request) {
	for r := range ch {
		if r.sem != nil {
			r.sem <- struct{}{}
		}
		if *shape == "direct" {
			created.Add(1)
			go handle(r)
		} else {
			spawn(r)
		}
	}
}

//go:noinline
func background(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		sink[2] += spin(20000)
		time.Sleep(200 * time.Microsecond)
	}
}

func main() {
	flag.Parse()
	chA, chB := make(chan *request, 64), make(chan *request, 64)
	var semA, semB chan struct{}
	if *shape == "limit" {
		semA, semB = make(chan struct{}, 4), make(chan struct{}, 4)
	}
	stop := make(chan struct{})
	go listenerA(chA)
	go listenerB(chB)
	go background(stop)
	var wg sync.WaitGroup
	start := time.Now()
	t0 = start
	tick := time.Second / time.Duration(*rate)
	next := start
	for i := 0; time.Since(start) < *duration; i++ {
		a := i%10 < 7
		wg.Add(1)
		r := &request{a: a, work: *work, wg: &wg}
		if a {
			r.sem = semA
			chA <- r
		} else {
			r.sem = semB
			chB <- r
		}
		next = next.Add(tick)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
	close(chA)
	close(chB)
	wg.Wait()
	close(stop)
	fmt.Printf("truth A=%d B=%d\ncreated %d\n", doneA.Load(), doneB.Load(), created.Load())
	if *goidFile != "" {
		f, err := os.Create(*goidFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		w := bufio.NewWriter(f)
		for _, id := range idsA {
			fmt.Fprintf(w, "A %d\n", id)
		}
		for _, id := range idsB {
			fmt.Fprintf(w, "B %d\n", id)
		}
		w.Flush()
		f.Close()
	}
}
