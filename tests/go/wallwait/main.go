// wallwait: goroutines parked in known ways and known numbers, for the
// goroutine wall-clock profile (pmuprof record --wall).  Usage:
//
//	wallwait [-chan N] [-sleep N] [-mutex N] [-select N] [-wg N] [-net N]
//	         [-pipe N] [-busy N] [-spin N] [-spinwrap N] [-fresh N]
//	         [-pprof FILE] SECS
//	wallwait -leak N SECS
//	wallwait -swing N SECS
//	wallwait N M K SECS      (= -chan N -sleep M -mutex K -busy 1 SECS)
//
// Each kind of goroutine waits in a function of its own:
//
//	main.chanWaiter   a channel receive nobody sends on
//	main.sleeper      time.Sleep in a loop
//	main.mutexWaiter  sync.Mutex.Lock on a mutex main holds
//	main.selectWaiter a select on two channels nobody sends on
//	main.wgWaiter     sync.WaitGroup.Wait on a group never done
//	main.netReader    a read on a TCP connection on loopback nobody writes to
//	                  (through Go's network poller, as net.Conn reads)
//	main.pipeReader   read(2) on a blocking pipe nobody writes to (in a syscall)
//	main.busy         spinning
//	main.spinner      spinning in calls to main.spinStep (its start function
//	                  is main.spinner, its CPU samples' leaf main.spinStep);
//	                  with -spinwrap, called from a closure (the start
//	                  function is the closure, a function of main.main)
//	main.fresh        made but never run: with -fresh, main spins on the one
//	                  P without a preemption point (run it with GOMAXPROCS=1
//	                  GODEBUG=asyncpreemptoff=1), so that they stay runnable
//	                  with their function's entry in g.sched.pc
//
// With -leak, N goroutines block in main.leaked on one channel, made by two
// request paths, main.handleA for 70 % of them and main.handleB for 30 %
// (interleaved); it prints "leak A B" (how many each made) and "ready MS".
// With -swing, 10 goroutines wait in main.chanWaiter throughout, and N more
// are made in main.swinger (blocked on one channel), then let go, over and
// over: it prints the ids of the 10 and "ready MS" first, then "up MS" and
// "down MS" each time (after they are all made, after they have all gone).
//
// It prints its truth: "goid FUNC ID" for each goroutine, "reason FUNC
// REASON" with the state or wait reason the runtime itself gives each (its
// own goroutine profile, debug=2), "ready MS" once every goroutine is parked
// (MS after main began), "goroutines N" then (runtime.NumGoroutine()), then with -pprof its own goroutine profile written
// to FILE halfway through ("pprof MS" when), and exits after SECS seconds.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
	_ "unsafe"
)

var ids = make(chan string, 1<<16)

func goid() int64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	f := bytes.Fields(b[:n])
	id, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return id
}

//go:noinline
func chanWaiter(c chan int) {
	ids <- fmt.Sprintf("goid chanWaiter %d", goid())
	<-c
}

//go:noinline
func sleeper() {
	ids <- fmt.Sprintf("goid sleeper %d", goid())
	for {
		time.Sleep(200 * time.Millisecond)
	}
}

//go:noinline
func mutexWaiter(mu *sync.Mutex) {
	ids <- fmt.Sprintf("goid mutexWaiter %d", goid())
	mu.Lock()
	mu.Unlock()
}

//go:noinline
func selectWaiter(a, b chan int) {
	ids <- fmt.Sprintf("goid selectWaiter %d", goid())
	select {
	case <-a:
	case <-b:
	}
}

//go:noinline
func wgWaiter(wg *sync.WaitGroup) {
	ids <- fmt.Sprintf("goid wgWaiter %d", goid())
	wg.Wait()
}

//go:noinline
func netReader(c *os.File) {
	ids <- fmt.Sprintf("goid netReader %d", goid())
	var b [16]byte
	c.Read(b[:])
}

//go:noinline
func pipeReader(fd int) {
	ids <- fmt.Sprintf("goid pipeReader %d", goid())
	var b [16]byte
	syscall.Read(fd, b[:])
}

//go:noinline
func leaked(c chan int) {
	<-c
}

//go:noinline
func handleA(c chan int) {
	go leaked(c)
}

//go:noinline
func handleB(c chan int) {
	go leaked(c)
}

//go:noinline
func swinger(c chan int, up, down *sync.WaitGroup) {
	up.Done()
	<-c
	down.Done()
}

var sink uint64

//go:noinline
func busy() {
	ids <- fmt.Sprintf("goid busy %d", goid())
	x := uint64(1)
	for {
		for i := 0; i < 1000000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}

//go:noinline
func spinStep(x uint64) uint64 {
	for i := 0; i < 100000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func spinner() {
	ids <- fmt.Sprintf("goid spinner %d", goid())
	x := uint64(1)
	for {
		x = spinStep(x)
		sink = x
	}
}

//go:noinline
func fresh() {
	sink++
}

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// spin until @ns of nanotime: no call with a stack check, so no preemption
// point (nanotime is nosplit), with asynchronous preemption off
//
//go:noinline
func spin(until int64) {
	x := uint64(1)
	for nanotime() < until {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

// tcpPair: the two ends of a TCP connection on loopback, the server's as an
// *os.File on Go's network poller (a non-blocking socket: its reads park in
// "IO wait", as net.Conn's do; the package net is not used, so that the
// fixture stays linked statically, without cgo)
func tcpPair() (*os.File, int) {
	ln, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		die("socket: %v", err)
	}
	lo := &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := syscall.Bind(ln, lo); err != nil {
		die("bind: %v", err)
	}
	if err := syscall.Listen(ln, 1); err != nil {
		die("listen: %v", err)
	}
	sa, err := syscall.Getsockname(ln)
	if err != nil {
		die("getsockname: %v", err)
	}
	cl, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		die("socket: %v", err)
	}
	if err := syscall.Connect(cl, sa); err != nil {
		die("connect: %v", err)
	}
	sv, _, err := syscall.Accept(ln)
	if err != nil {
		die("accept: %v", err)
	}
	syscall.Close(ln)
	if err := syscall.SetNonblock(sv, true); err != nil {
		die("nonblock: %v", err)
	}
	return os.NewFile(uintptr(sv), "tcp"), cl
}

func die(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "wallwait: "+f+"\n", a...)
	os.Exit(1)
}

func main() {
	start := time.Now()
	nchan := flag.Int("chan", 0, "goroutines in a channel receive")
	nsleep := flag.Int("sleep", 0, "goroutines sleeping")
	nmutex := flag.Int("mutex", 0, "goroutines waiting on a mutex")
	nselect := flag.Int("select", 0, "goroutines in a select")
	nwg := flag.Int("wg", 0, "goroutines waiting on a WaitGroup")
	nnet := flag.Int("net", 0, "goroutines reading a TCP connection on loopback")
	npipe := flag.Int("pipe", 0, "goroutines in read(2) on a blocking pipe")
	nbusy := flag.Int("busy", 0, "goroutines spinning")
	nspin := flag.Int("spin", 0, "goroutines spinning in calls to main.spinStep")
	nspinwrap := flag.Int("spinwrap", 0, "the same, main.spinner called from a closure")
	nfresh := flag.Int("fresh", 0, "goroutines made and never run")
	nleak := flag.Int("leak", 0, "goroutines leaked by two request paths, 70/30")
	nswing := flag.Int("swing", 0, "goroutines made and let go over and over")
	prof := flag.String("pprof", "", "write the goroutine profile there halfway through")
	flag.Parse()
	args := flag.Args()
	if len(args) == 4 { // the old form: N M K SECS
		*nchan, _ = strconv.Atoi(args[0])
		*nsleep, _ = strconv.Atoi(args[1])
		*nmutex, _ = strconv.Atoi(args[2])
		*nbusy = 1
		args = args[3:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: wallwait [-chan N] [-sleep N] [-mutex N] [-select N] [-wg N] [-net N] [-pipe N] [-busy N] [-spin N] [-spinwrap N] [-fresh N] [-pprof FILE] SECS")
		os.Exit(2)
	}
	secs, err := strconv.ParseFloat(args[0], 64)
	if err != nil {
		die("bad SECS %q", args[0])
	}
	if *nfresh > 0 {
		// main keeps the one P: they never run
		// (no system call once they are made: the P would be handed off)
		runtime.GOMAXPROCS(1)
		fmt.Printf("ready %d\n", time.Since(start).Milliseconds()+1)
		until := nanotime() + int64(secs*1e9)
		for i := 0; i < *nfresh; i++ {
			go fresh()
		}
		spin(until)
		return
	}
	if *nleak > 0 {
		c := make(chan int)
		a, b := 0, 0
		for i := 0; i < *nleak; i++ {
			if i%10 < 7 {
				handleA(c)
				a++
			} else {
				handleB(c)
				b++
			}
		}
		for runtime.NumGoroutine() < *nleak+1 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		fmt.Printf("leak %d %d\nready %d\n", a, b, time.Since(start).Milliseconds()+1)
		time.Sleep(time.Duration(secs * float64(time.Second)))
		return
	}
	if *nswing > 0 {
		base := make(chan int)
		for i := 0; i < 10; i++ {
			go chanWaiter(base)
			fmt.Println(<-ids)
		}
		fmt.Printf("ready %d\n", time.Since(start).Milliseconds()+1)
		end := start.Add(time.Duration(secs * float64(time.Second)))
		for time.Now().Before(end) {
			c := make(chan int)
			var up, down sync.WaitGroup
			up.Add(*nswing)
			down.Add(*nswing)
			for i := 0; i < *nswing; i++ {
				go swinger(c, &up, &down)
			}
			up.Wait()
			fmt.Printf("up %d\n", time.Since(start).Milliseconds())
			time.Sleep(300 * time.Millisecond)
			close(c)
			down.Wait()
			for runtime.NumGoroutine() > 11 {
				time.Sleep(time.Millisecond)
			}
			fmt.Printf("down %d\n", time.Since(start).Milliseconds())
			time.Sleep(300 * time.Millisecond)
		}
		return
	}
	c := make(chan int)
	sa, sb := make(chan int), make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	mu.Lock()
	wg.Add(1)
	n := 0
	for i := 0; i < *nchan; i++ {
		go chanWaiter(c)
	}
	for i := 0; i < *nsleep; i++ {
		go sleeper()
	}
	for i := 0; i < *nmutex; i++ {
		go mutexWaiter(&mu)
	}
	for i := 0; i < *nselect; i++ {
		go selectWaiter(sa, sb)
	}
	for i := 0; i < *nwg; i++ {
		go wgWaiter(&wg)
	}
	n += *nchan + *nsleep + *nmutex + *nselect + *nwg
	var conns []int // kept open (the peers of the readers' connections)
	for i := 0; i < *nnet; i++ {
		sv, cl := tcpPair()
		conns = append(conns, cl)
		go netReader(sv)
	}
	n += *nnet
	var pipes []int // the write ends, kept open
	for i := 0; i < *npipe; i++ {
		var p [2]int
		if err := syscall.Pipe(p[:]); err != nil { // blocking: read(2) waits in the kernel
			die("pipe: %v", err)
		}
		pipes = append(pipes, p[1])
		go pipeReader(p[0])
	}
	n += *npipe
	for i := 0; i < *nbusy; i++ {
		go busy()
	}
	n += *nbusy
	for i := 0; i < *nspin; i++ {
		go spinner()
	}
	for i := 0; i < *nspinwrap; i++ {
		go func() { spinner() }()
	}
	n += *nspin + *nspinwrap
	for i := 0; i < n; i++ {
		fmt.Println(<-ids)
	}
	time.Sleep(100 * time.Millisecond) // every one parked where it stays
	fmt.Printf("goid main %d\n", goid())
	var buf bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&buf, 2)
	re := regexp.MustCompile(`(?m)^goroutine \d+ \[([^,\]]+)[^\n]*\n(?:[^\n]+\n)*?main\.(chanWaiter|sleeper|mutexWaiter|selectWaiter|wgWaiter|netReader|pipeReader)\(`)
	seen := map[string]string{}
	for _, mt := range re.FindAllStringSubmatch(buf.String(), -1) {
		if _, ok := seen[mt[2]]; !ok {
			seen[mt[2]] = mt[1]
			fmt.Printf("reason %s %s\n", mt[2], mt[1])
		}
	}
	fmt.Printf("ready %d\n", time.Since(start).Milliseconds()+1)
	fmt.Printf("goroutines %d\n", runtime.NumGoroutine())
	half := time.Duration(secs * float64(time.Second) / 2)
	time.Sleep(half)
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			die("%v", err)
		}
		at := time.Since(start).Milliseconds()
		if err := pprof.Lookup("goroutine").WriteTo(f, 0); err != nil {
			die("%v", err)
		}
		f.Close()
		fmt.Printf("pprof %d\n", at)
	}
	time.Sleep(half)
	runtime.KeepAlive(conns)
	runtime.KeepAlive(pipes)
}
