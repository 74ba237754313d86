// Command agree is the fixture for pmuprof agreeing with Go's own profiler.
//
//	agree -mode sys [-secs 1]
//	    half its CPU in user code (main.userWork), half in read(2) of
//	    /dev/zero (the kernel copies 256 KiB a call: main.sysWork's syscall);
//	    prints "rusage user_ms=U sys_ms=S" of itself at the end.
//	agree -mode frames [-secs 1] [-cpuprofile FILE]
//	    work reached through what Go's tracebacks hide: the wrappers of go
//	    statements with arguments (go obj.method(x), go f(x)), a closure (go
//	    func(){}), a method value (f := obj.method), deferred closures and
//	    calls run by runtime.deferreturn (a defer in a loop), each leaf
//	    function named main.leafX; runtime/pprof's CPU profile of the whole
//	    run written to FILE.
//	agree -mode park [-secs 1]
//	    goroutines that park and unpark all the time (an unbuffered channel
//	    ping-pong: runtime.mcall on each side) and one that calls time.Now in
//	    a loop (the vDSO), under 0 to 3 frames of main.nowDeep in turn.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

var sink uint64

//go:noinline
func spin(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func userWork(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		sink += spin(200000)
	}
}

//go:noinline
func sysWork(f *os.File, buf []byte, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 16; i++ {
			if _, err := f.Read(buf); err != nil {
				panic(err)
			}
		}
	}
}

func modeSys(secs float64) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 256<<10)
	step := 50 * time.Millisecond
	for end := time.Now().Add(time.Duration(secs * float64(time.Second))); time.Now().Before(end); {
		userWork(step)
		sysWork(f, buf, step)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	fmt.Printf("rusage user_ms=%d sys_ms=%d\n", ru.Utime.Sec*1000+ru.Utime.Usec/1000,
		ru.Stime.Sec*1000+ru.Stime.Usec/1000)
}

type obj struct{ n int }

//go:noinline
func leafMethod(n int) { sink += spin(n) }

//go:noinline
func leafFunc(n int) { sink += spin(n) }

//go:noinline
func leafClosure(n int) { sink += spin(n) }

//go:noinline
func leafValue(n int) { sink += spin(n) }

//go:noinline
func leafDefer(n int) { sink += spin(n) }

//go:noinline
func leafLoopDefer(n int) { sink += spin(n) }

//go:noinline
func (o *obj) method(n int, wg *sync.WaitGroup) {
	leafMethod(n)
	wg.Done()
}

//go:noinline
func plain(n int, wg *sync.WaitGroup) {
	leafFunc(n)
	wg.Done()
}

//go:noinline
func (o *obj) value(n int) { leafValue(n) }

//go:noinline
func deferred(n int) {
	defer func() { leafDefer(n) }()
	sink++
}

//go:noinline
func loopDefer(n int) {
	for i := 0; i < 2; i++ {
		defer leafLoopDefer(n / 2) // a defer in a loop: run by runtime.deferreturn
	}
}

//go:noinline
func runValue(f func(int), n int) { f(n) }

func modeFrames(secs float64, prof string) {
	var pf *os.File
	if prof != "" {
		var err error
		if pf, err = os.Create(prof); err != nil {
			panic(err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			panic(err)
		}
	}
	o := &obj{}
	const n = 300000
	for end := time.Now().Add(time.Duration(secs * float64(time.Second))); time.Now().Before(end); {
		var wg sync.WaitGroup
		wg.Add(3)
		go o.method(n, &wg)
		go plain(n, &wg)
		go func() {
			leafClosure(n)
			wg.Done()
		}()
		runValue(o.value, n)
		deferred(n)
		loopDefer(n)
		wg.Wait()
	}
	if pf != nil {
		pprof.StopCPUProfile()
		if err := pf.Close(); err != nil {
			panic(err)
		}
	}
}

func modePark(secs float64) {
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		ping, pong := make(chan int), make(chan int)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i%1024 == 0 && time.Now().After(end) {
					close(ping)
					return
				}
				ping <- i
				<-pong
			}
		}()
		go func() {
			defer wg.Done()
			for v := range ping {
				pong <- v
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var t int64
		for time.Now().Before(end) {
			for i := 0; i < 1000; i++ {
				t += nowDeep(i & 3)
			}
		}
		sink += uint64(t)
	}()
	wg.Wait()
}

// nowDeep calls time.Now under d frames of itself: the goroutine stack
// above the vDSO call differs from one call to the next.
//
//go:noinline
func nowDeep(d int) int64 {
	if d > 0 {
		return nowDeep(d-1) + 1
	}
	return time.Now().UnixNano() & 1
}

func main() {
	mode := flag.String("mode", "sys", "sys, frames or park")
	secs := flag.Float64("secs", 1, "seconds of work")
	prof := flag.String("cpuprofile", "", "frames: write runtime/pprof's CPU profile here")
	flag.Parse()
	runtime.GOMAXPROCS(2)
	switch *mode {
	case "sys":
		modeSys(*secs)
	case "frames":
		modeFrames(*secs, *prof)
	case "park":
		modePark(*secs)
	default:
		fmt.Fprintln(os.Stderr, "usage: agree -mode sys|frames|park [-secs S] [-cpuprofile FILE]")
		os.Exit(2)
	}
}
