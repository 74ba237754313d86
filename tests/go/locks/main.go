// Command locks is a profiler test fixture with a known answer for lock
// contention: ten goroutines contend for one sync.Mutex (main.mu) from
// two call sites, main.siteA and main.siteB, in identical loops (-n
// rounds each: hold the lock for -hold of spinning, then spin -gap
// outside it), each goroutine seven rounds of ten through siteA and
// three through siteB, in turn (so that the sites' shares are 70/30
// whatever the scheduler does to single goroutines: with seven goroutines
// at one site and three at the other, site A's share of the waiting
// varied from 63 to 76 % between runs); one more goroutine locks a second
// mutex (main.quiet) that nobody else takes, in main.lonely: it never
// contends.
//
// With -rw R instead, six goroutines take an RWMutex's read lock
// (main.reader) and two its write lock (main.writer), R rounds each:
// readers wait for the writers, writers for the readers and each other;
// truth "truth main.reader|main.writer GOROUTINES LOCKS WAITED_NS" and
// "addr rw 0x...".
//
// With -chan S instead, S goroutines send -n thousand values each on one
// channel to four receivers, GOMAXPROCS 4: the channel's lock (a
// runtime lock) contended ("truth chan S senders V values").
//
// -delay waits before the work (for a profiler to attach).  -prof FILE
// and -block FILE write the program's own mutex and block profiles at
// the end (with -rate 1: SetMutexProfileFraction(1) and
// SetBlockProfileRate(1) first thing in main).
//
// Truth, printed at the end, one line per call site:
// "truth SITE PERCENT LOCKS WAITED_NS CONTENDED" (the locks taken there,
// the time spent in Lock measured around each call, and the contended
// ones: a TryLock that failed first, then Lock: its slow path), and
// "addr mu 0x..." / "addr quiet 0x..." (the mutexes' addresses), and
// "elapsed NS" (the work's wall time).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

var (
	n     = flag.Int("n", 300, "rounds per goroutine")
	hold  = flag.Duration("hold", 200*time.Microsecond, "time the lock is held each round")
	gap   = flag.Duration("gap", 20*time.Microsecond, "time spent outside the lock each round")
	delay = flag.Duration("delay", 0, "wait before the work")
	rate  = flag.Int("rate", 0, "1: SetMutexProfileFraction(1) and SetBlockProfileRate(1)")
	prof  = flag.String("prof", "", "write the program's own mutex profile here")
	block = flag.String("block", "", "write the program's own block profile here")

	rwn = flag.Int("rw", 0, "instead: RWMutex rounds per goroutine (6 readers, 2 writers)")
	chn = flag.Int("chan", 0, "instead: this many senders and 4 receivers on one channel, GOMAXPROCS 4, -n thousand values each")

	rw     sync.RWMutex
	rwait  [2]int64 // readers, writers
	rlocks [2]int64
	mu     sync.Mutex
	quiet  sync.Mutex
	shared int64
	waited [2]int64
	locks  [2]int64

	contended [2]int64 // Lock calls after a failed TryLock
)

func spin(d time.Duration) {
	t := time.Now()
	for time.Since(t) < d {
	}
}

//go:noinline
func round(site int) {
	t := time.Now()
	if !mu.TryLock() { // held: this Lock takes the slow path (but in a rare race)
		atomic.AddInt64(&contended[site], 1)
		mu.Lock()
	}
	atomic.AddInt64(&waited[site], int64(time.Since(t)))
	atomic.AddInt64(&locks[site], 1)
	shared++
	spin(*hold)
	mu.Unlock()
	spin(*gap)
}

//go:noinline
func siteA() { round(0) }

//go:noinline
func siteB() { round(1) }

// worker i takes the lock from siteA in seven rounds of ten and from
// siteB in the other three, in turn.
//
//go:noinline
func worker(i int, wg *sync.WaitGroup) {
	defer wg.Done()
	for r := 0; r < *n; r++ {
		if (i+r)%10 < 7 {
			siteA()
		} else {
			siteB()
		}
	}
}

//go:noinline
func lonely(stop *int32) {
	for atomic.LoadInt32(stop) == 0 {
		quiet.Lock()
		shared++
		quiet.Unlock()
		time.Sleep(100 * time.Microsecond)
	}
}

// reader takes rw's read lock, holds it, and waits a gap.
//
//go:noinline
func reader(wg *sync.WaitGroup) {
	defer wg.Done()
	for r := 0; r < *rwn; r++ {
		t := time.Now()
		rw.RLock()
		atomic.AddInt64(&rwait[0], int64(time.Since(t)))
		atomic.AddInt64(&rlocks[0], 1)
		spin(*hold)
		rw.RUnlock()
		spin(*gap)
	}
}

// writer takes rw's write lock, holds it, and waits a longer gap.
//
//go:noinline
func writer(wg *sync.WaitGroup) {
	defer wg.Done()
	for r := 0; r < *rwn; r++ {
		t := time.Now()
		rw.Lock()
		atomic.AddInt64(&rwait[1], int64(time.Since(t)))
		atomic.AddInt64(&rlocks[1], 1)
		shared++
		spin(*hold)
		rw.Unlock()
		spin(4 * *hold)
	}
}

// rwphase: six readers and two writers on rw; the truth per side.
func rwphase() {
	var wg sync.WaitGroup
	wg.Add(8)
	for i := 0; i < 8; i++ {
		if i%4 == 3 {
			go writer(&wg)
		} else {
			go reader(&wg)
		}
	}
	wg.Wait()
	fmt.Printf("truth main.reader 6 %d %d\n", rlocks[0], rwait[0])
	fmt.Printf("truth main.writer 2 %d %d\n", rlocks[1], rwait[1])
	fmt.Printf("addr rw %p\n", &rw)
}

// sender sends *n thousand values on c.
//
//go:noinline
func sender(c chan int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < *n*1000; i++ {
		c <- i
	}
}

// receiver takes values from c until it is closed.
//
//go:noinline
func receiver(c chan int, wg *sync.WaitGroup) {
	defer wg.Done()
	for range c {
	}
}

// chanphase: *chn senders and 4 receivers on one channel, GOMAXPROCS 4:
// the channel's lock (a runtime lock) contended, its waiters asleep in
// the runtime's lock2.
func chanphase() {
	runtime.GOMAXPROCS(4)
	c := make(chan int, 8)
	var ws, wr sync.WaitGroup
	ws.Add(*chn)
	wr.Add(4)
	for i := 0; i < 4; i++ {
		go receiver(c, &wr)
	}
	for i := 0; i < *chn; i++ {
		go sender(c, &ws)
	}
	ws.Wait()
	close(c)
	wr.Wait()
	fmt.Printf("truth chan %d senders %d values\n", *chn, *chn**n*1000)
}

func write(name, file string) {
	if file == "" {
		return
	}
	f, err := os.Create(file)
	if err == nil {
		err = pprof.Lookup(name).WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "locks:", err)
		os.Exit(1)
	}
}

func main() {
	flag.Parse()
	if *rate == 1 {
		runtime.SetMutexProfileFraction(1)
		runtime.SetBlockProfileRate(1)
	}
	time.Sleep(*delay)
	if *rwn > 0 {
		rwphase()
		return
	}
	if *chn > 0 {
		chanphase()
		write("mutex", *prof)
		return
	}
	start := time.Now()
	var stop int32
	done := make(chan struct{})
	go func() { lonely(&stop); close(done) }()
	var wg sync.WaitGroup
	wg.Add(10)
	for i := 0; i < 10; i++ {
		go worker(i, &wg)
	}
	wg.Wait()
	atomic.StoreInt32(&stop, 1)
	<-done
	write("mutex", *prof)
	write("block", *block)
	fmt.Printf("truth main.siteA 70 %d %d %d\n", locks[0], waited[0], contended[0])
	fmt.Printf("truth main.siteB 30 %d %d %d\n", locks[1], waited[1], contended[1])
	fmt.Printf("addr mu %p\naddr quiet %p\n", &mu, &quiet)
	fmt.Printf("elapsed %d\n", time.Since(start).Nanoseconds())
}
