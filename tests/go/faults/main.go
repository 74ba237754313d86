// Command faults is a fixture for pmuprof's fault tests: load a profiler
// must survive.  -mode picks one:
//
//	busy     N goroutines (-n) spin in main.spin until -secs pass
//	threads  create and destroy OS threads as fast as possible: each
//	         goroutine locks itself to a new thread and exits locked, so the
//	         runtime ends that thread; one in 8 spins 1.5 ms of its own CPU
//	         time first; prints "threads N" (N created, N/8 of them spun)
//	remap    map a small file of x86-64 code PROT_EXEC, call into it, unmap
//	         it, map it again elsewhere (alternating two files), over and
//	         over; prints "remaps N", then "codecpu code0=S code1=S" (the
//	         CPU seconds its thread spent in calls of each file's code)
//	deep     spin at the bottom of a 3000-frame recursion (main.deep)
//	stacks   spin under many distinct stacks: a chain of 10 calls, each
//	         one of main.pa .. main.pd picked by the bits of a counter
//
// -cpu FILE: at a normal exit, write "cpu S" to FILE, S the CPU seconds
// (user + system, getrusage RUSAGE_SELF) the process used: the truth a
// profile's sample count is compared with.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var sink uint64

// threadCPU is the CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

//go:noinline
func spin(stop *int32) {
	x := uint64(1)
	for atomic.LoadInt32(stop) == 0 {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	atomic.AddUint64(&sink, x)
}

func busy(n int, d time.Duration) {
	var stop int32
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); spin(&stop) }()
	}
	time.Sleep(d)
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
}

// One thread in 8 spins until it has used 1.5 ms of CPU time (a cpu-clock
// sample at 1 kHz needs 1 ms of CPU on one thread: each such thread is
// worth one sample, whatever the load or the speed of the CPU), the rest
// almost nothing, so the churn is fast and still sampled.
//
//go:noinline
func threadBody(done chan<- struct{}, long bool) {
	runtime.LockOSThread()
	x := uint64(3)
	if long {
		t0 := threadCPU()
		for threadCPU()-t0 < 1500*time.Microsecond {
			for i := 0; i < 20000; i++ {
				x = x*x + 1
			}
		}
	}
	atomic.AddUint64(&sink, x)
	done <- struct{}{}
	// exits still locked: the runtime terminates this thread
}

func threads(d time.Duration) {
	end := time.Now().Add(d)
	n := 0
	done := make(chan struct{}, 8)
	for time.Now().Before(end) {
		for k := 0; k < 8; k++ {
			go threadBody(done, k == 0)
		}
		for k := 0; k < 8; k++ {
			<-done
		}
		n += 8
	}
	fmt.Printf("threads %d\n", n)
}

// mov ecx, COUNT; 1: dec ecx; jnz 1b; ret
func code(count uint32) []byte {
	b := []byte{0xb9, 0, 0, 0, 0, 0xff, 0xc9, 0x75, 0xfc, 0xc3}
	b[1], b[2], b[3], b[4] = byte(count), byte(count>>8), byte(count>>16), byte(count>>24)
	return b
}

//go:noinline
func callCode(mem []byte) {
	p := unsafe.Pointer(&mem[0])
	fv := &p
	f := *(*func())(unsafe.Pointer(&fv))
	f()
}

func remap(d time.Duration) {
	dir, err := os.MkdirTemp("", "pmuprof-remap")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	var fds [2]int
	for i := range fds {
		path := filepath.Join(dir, fmt.Sprintf("code%d.bin", i))
		page := make([]byte, 4096)
		copy(page, code(uint32(200000*(i+1))))
		if err := os.WriteFile(path, page, 0o600); err != nil {
			panic(err)
		}
		fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
		if err != nil {
			panic(err)
		}
		fds[i] = fd
	}
	runtime.LockOSThread()
	end := time.Now().Add(d)
	n := 0
	var keep [][]byte
	var incode [2]time.Duration
	for time.Now().Before(end) {
		mem, err := syscall.Mmap(fds[n%2], 0, 4096, syscall.PROT_READ|syscall.PROT_EXEC,
			syscall.MAP_PRIVATE)
		if err != nil {
			panic(err)
		}
		t0 := threadCPU()
		for k := 0; k < 20; k++ {
			callCode(mem)
		}
		incode[n%2] += threadCPU() - t0
		// every third mapping stays a little longer, so addresses move
		if n%3 == 0 {
			keep = append(keep, mem)
		} else if err := syscall.Munmap(mem); err != nil {
			panic(err)
		}
		if len(keep) > 4 {
			syscall.Munmap(keep[0])
			keep = keep[1:]
		}
		n++
	}
	for _, m := range keep {
		syscall.Munmap(m)
	}
	fmt.Printf("remaps %d\n", n)
	fmt.Printf("codecpu code0=%.6f code1=%.6f\n", incode[0].Seconds(), incode[1].Seconds())
}

//go:noinline
func deep(n int, stop *int32) {
	if n > 0 {
		deep(n-1, stop)
		return
	}
	spin(stop)
}

func runDeep(d time.Duration) {
	var stop int32
	go func() { time.Sleep(d); atomic.StoreInt32(&stop, 1) }()
	deep(3000, &stop)
}

//go:noinline
func work(x uint64) uint64 {
	for i := 0; i < 20000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

var fns [4]func(uint32, int, uint64) uint64

//go:noinline
func pa(k uint32, n int, x uint64) uint64 { return step(k, n, x) + 1 }

//go:noinline
func pb(k uint32, n int, x uint64) uint64 { return step(k, n, x) + 2 }

//go:noinline
func pc(k uint32, n int, x uint64) uint64 { return step(k, n, x) + 3 }

//go:noinline
func pd(k uint32, n int, x uint64) uint64 { return step(k, n, x) + 4 }

func step(k uint32, n int, x uint64) uint64 {
	if n == 0 {
		return work(x)
	}
	return fns[k&3](k>>2, n-1, x)
}

func manyStacks(d time.Duration) {
	fns = [4]func(uint32, int, uint64) uint64{pa, pb, pc, pd}
	end := time.Now().Add(d)
	var x uint64
	for k := uint32(0); time.Now().Before(end); k = k*1103515245 + 12345 {
		x += step(k>>8, 10, x)
	}
	atomic.AddUint64(&sink, x)
}

func main() {
	mode := flag.String("mode", "busy", "busy, threads, remap, deep or stacks")
	secs := flag.Float64("secs", 3, "seconds to run")
	n := flag.Int("n", 2, "busy goroutines")
	cpuFile := flag.String("cpu", "", "write the process's CPU seconds to this file at exit")
	flag.Parse()
	d := time.Duration(*secs * float64(time.Second))
	switch *mode {
	case "busy":
		runtime.GOMAXPROCS(*n)
		busy(*n, d)
	case "threads":
		threads(d)
	case "remap":
		remap(d)
	case "deep":
		runDeep(d)
	case "stacks":
		manyStacks(d)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", *mode)
		os.Exit(2)
	}
	if *cpuFile != "" {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		s := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		if err := os.WriteFile(*cpuFile, []byte(fmt.Sprintf("cpu %.6f\n", s)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
