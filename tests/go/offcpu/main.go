// Command offcpu is a profiler test fixture with a known answer for
// off-CPU time: threads blocked in the kernel.
//
// main.pipeReader blocks -n times in read(2) on a blocking pipe
// (syscall.Read on the raw descriptor, so its thread sleeps in the kernel
// and not in the runtime's network poller); main.pipeWriter writes one
// byte into the pipe after each -sleep.  At the same time main.syncer
// writes -kb KiB into a file in -dir and fsyncs it, -n times.  With
// -spin, main.spinner burns CPU meanwhile (for CPU and off-CPU profiles
// in one recording).  Every other goroutine parks (time.Sleep, a
// WaitGroup): their threads go idle, blocked in the kernel without a
// goroutine.
//
// With -pingpong N instead, two goroutines, each on a thread of its own,
// send one byte back and forth N times over two blocking pipes: every
// round trip blocks each thread once (a program that switches a lot);
// it prints "pingpong N ROUNDTRIPS NS" (the time they took).
//
// -delay waits before the work (for a profiler to attach).  Each of the
// two prints its thread and goroutine ids ("tid main.pipeReader N",
// "goid main.pipeReader N"); main.pipeReader runs with the pprof label
// role=reader.
//
// Truth, printed at the end: "truth main.pipeReader CALLS NS CPU_NS RUNQ_NS"
// and "truth main.syncer CALLS NS CPU_NS RUNQ_NS", the time spent in the
// read and in the fsync calls, measured around each call, the CPU time its
// thread used meanwhile (CLOCK_THREAD_CPUTIME_ID: each goroutine is locked
// to its thread) and the time it waited on a run queue (schedstat: woken
// and waiting for a CPU, or preempted).  The time off CPU is NS - CPU_NS;
// the time blocked, not waiting for a CPU, at least NS - CPU_NS - RUNQ_NS.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var (
	n     = flag.Int("n", 10, "blocking reads, and fsyncs")
	sleep = flag.Duration("sleep", 40*time.Millisecond, "the writer's sleep before each byte")
	kb    = flag.Int("kb", 2048, "KiB written before each fsync")
	dir   = flag.String("dir", os.TempDir(), "where the fsync'd file goes")
	delay = flag.Duration("delay", 0, "wait before the work")
	spin  = flag.Bool("spin", false, "also burn CPU in main.spinner")
	pp    = flag.Int("pingpong", 0, "instead: N round trips between two threads over two pipes")

	stop int32
)

// the calling goroutine's id, from its traceback's first line
func goid() int64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseInt(f[1], 10, 64)
	return id
}

// one call's wall time, its thread's CPU time and time waiting for a CPU, added up
type meter struct{ ns, cpu, runq int64 }

// the time the thread has waited for a CPU on a run queue (/proc/thread-self/schedstat:
// woken and not yet running, or preempted)
func threadRunq() int64 {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 2 {
		return 0
	}
	v, _ := strconv.ParseInt(f[1], 10, 64)
	return v
}

// the thread's CPU time, to the nanosecond (getrusage misses the running slice)
func threadCPU() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		fmt.Fprintln(os.Stderr, "clock_gettime:", e)
		os.Exit(1)
	}
	return ts.Nano()
}

// the windows nest: the run queue's holds the wall time's, which holds the
// CPU time's, so that NS - CPU is at least the time off CPU in the wall
// window and RUNQ at least its part on a run queue (a thread preempted
// while it reads schedstat, out of the run queue's window but in the wall
// time's, made NS - CPU - RUNQ more than the time blocked)
func (m *meter) start() (time.Time, int64, int64) {
	q := threadRunq()
	t := time.Now()
	return t, threadCPU(), q
}

func (m *meter) stop(t time.Time, c, q int64) {
	m.cpu += threadCPU() - c
	m.ns += int64(time.Since(t))
	m.runq += threadRunq() - q
}

//go:noinline
func pipeReader(fd int, wg *sync.WaitGroup, m *meter) {
	defer wg.Done()
	runtime.LockOSThread()
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("role", "reader")))
	fmt.Printf("tid main.pipeReader %d\n", syscall.Gettid())
	fmt.Printf("goid main.pipeReader %d\n", goid())
	buf := make([]byte, 1)
	for i := 0; i < *n; i++ {
		t, c, q := m.start()
		if _, err := syscall.Read(fd, buf); err != nil {
			fmt.Fprintln(os.Stderr, "read:", err)
			os.Exit(1)
		}
		m.stop(t, c, q)
	}
}

//go:noinline
func pipeWriter(fd int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < *n; i++ {
		time.Sleep(*sleep)
		if _, err := syscall.Write(fd, []byte{'x'}); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			os.Exit(1)
		}
	}
}

//go:noinline
func syncer(path string, wg *sync.WaitGroup, m *meter) {
	defer wg.Done()
	runtime.LockOSThread()
	fmt.Printf("tid main.syncer %d\n", syscall.Gettid())
	fmt.Printf("goid main.syncer %d\n", goid())
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.Remove(path)
	defer f.Close()
	block := make([]byte, *kb<<10)
	for i := range block {
		block[i] = byte(i * 7)
	}
	for i := 0; i < *n; i++ {
		if _, err := f.Write(block); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		t, c, q := m.start()
		if err := syscall.Fsync(int(f.Fd())); err != nil {
			fmt.Fprintln(os.Stderr, "fsync:", err)
			os.Exit(1)
		}
		m.stop(t, c, q)
		time.Sleep(*sleep / 2)
	}
}

//go:noinline
func spinner() {
	x := 0
	for atomic.LoadInt32(&stop) == 0 {
		for i := 0; i < 100000; i++ {
			x += i ^ x
		}
	}
	if x == 42 {
		fmt.Println()
	}
}

// pingpong: N round trips over the pipes a (there) and b (back)
func pingpong(rounds int) {
	var a, b [2]int
	if err := syscall.Pipe(a[:]); err != nil {
		panic(err)
	}
	if err := syscall.Pipe(b[:]); err != nil {
		panic(err)
	}
	done := make(chan bool)
	go func() {
		runtime.LockOSThread()
		buf := []byte{0}
		for i := 0; i < rounds; i++ {
			syscall.Read(a[0], buf)
			syscall.Write(b[1], buf)
		}
		done <- true
	}()
	runtime.LockOSThread()
	buf := []byte{0}
	t := time.Now()
	for i := 0; i < rounds; i++ {
		syscall.Write(a[1], buf)
		syscall.Read(b[0], buf)
	}
	<-done
	fmt.Printf("pingpong %d %d\n", rounds, int64(time.Since(t)))
}

func main() {
	flag.Parse()
	fmt.Printf("ready %d\n", os.Getpid())
	time.Sleep(*delay)
	if *pp > 0 {
		pingpong(*pp)
		return
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		fmt.Fprintln(os.Stderr, "pipe:", err)
		os.Exit(1)
	}
	if *spin {
		go spinner()
	}
	var wg sync.WaitGroup
	var rd, sy meter
	wg.Add(3)
	go pipeReader(p[0], &wg, &rd)
	go pipeWriter(p[1], &wg)
	go syncer(filepath.Join(*dir, fmt.Sprintf("offcpu-%d.dat", os.Getpid())), &wg, &sy)
	wg.Wait()
	atomic.StoreInt32(&stop, 1)
	fmt.Printf("truth main.pipeReader %d %d %d %d\n", *n, rd.ns, rd.cpu, rd.runq)
	fmt.Printf("truth main.syncer %d %d %d %d\n", *n, sy.ns, sy.cpu, sy.runq)
}
