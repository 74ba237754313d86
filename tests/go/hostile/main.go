// hostile: a Go program that corrupts its own runtime structures, through
// unsafe, while a profiler reads them from outside (pmuprof record --wall
// --inuse --alloc ...).  Usage:
//
//	hostile -mode MODE [-secs S] [-keep]
//
// MODE is one of
//
//	allgs    runtime.allgs' length and capacity set to 1<<40 (the array is
//	         as it was: its real entries, then whatever memory follows)
//	stack    two parked goroutines' stack bounds: main.victimLow's at an
//	         unmapped page (0x1000..0x2000), main.victimHuge's the whole
//	         address space (0..1<<47)
//	buckets  the heap profile's list of records (runtime.mbuckets, linked
//	         by allnext) made a cycle: its last record's allnext set to its
//	         first
//	reason   a parked goroutine's (main.victimReason) g.waitreason set to
//	         255, out of every runtime's range of wait reasons
//	labels   a goroutine (main.labeled) runs under a pprof label whose value
//	         is 1 MB, with a 1 MB key and 100 labels besides
//	all      every one of them at once
//	none     nothing corrupted (the baseline)
//
// Throughout, main.spin spins (CPU samples), main.allocer allocates (heap
// profile records), main.locker contends on a mutex (lock waits) and
// main.parked goroutines wait on a channel: the parts never corrupted.
// The garbage collector is off (debug.SetGCPercent(-1)) from the start and
// no goroutine is made after the corruption: the runtime walks allgs and
// mbuckets in the GC (forEachG, mProf_Flush) and when it makes goroutines,
// none of which run while its structures are corrupted.  After S seconds
// (default 3) corrupted, each is restored (unless -keep: the program exits
// corrupted, exit(2) reads none of it) and the program runs 0.3 s more and
// exits.
//
// It prints its truth, one line each: "symbols ok" (or "symbols missing:
// WHY" and exit 3: a stripped build has no symbols to find its runtime's
// variables by), "goroutines N" (len(allgs) before), "buckets N" (records
// in the list before), "applied MODE MS" per corruption (ms after main
// began), "restored MODE MS", "done MS".
package main

import (
	"context"
	"debug/dwarf"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
	"unsafe"
)

var (
	t0      = time.Now()
	sink    []byte
	keep    [][]byte
	spinsum uint64
	stop    = make(chan struct{})
)

func ms() int64 { return time.Since(t0).Milliseconds() }

//go:noinline
func spin() {
	for {
		for i := 0; i < 1000000; i++ {
			spinsum += uint64(i)
		}
		select {
		case <-stop:
			return
		default:
		}
	}
}

//go:noinline
func allocer() {
	for {
		for i := 0; i < 16; i++ {
			allocSmall()
			allocBig()
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

//go:noinline
func allocSmall() {
	sink = make([]byte, 4<<10)
}

//go:noinline
func allocBig() {
	sink = make([]byte, 16<<10)
	if len(keep) < 512 {
		keep = append(keep, sink)
	}
}

var mu sync.Mutex

//go:noinline
func locker() {
	for {
		mu.Lock()
		time.Sleep(2 * time.Millisecond)
		mu.Unlock()
		select {
		case <-stop:
			return
		default:
		}
	}
}

// The victims record the address of one of their locals before they park:
// the g whose stack holds it is theirs.
var victimAt [3]uintptr
var wake [3]chan struct{}

//go:noinline
func victimLow(c chan struct{}) {
	var x int
	victimAt[0] = uintptr(unsafe.Pointer(&x))
	<-c
	runtime.KeepAlive(&x)
}

//go:noinline
func victimHuge(c chan struct{}) {
	var x int
	victimAt[1] = uintptr(unsafe.Pointer(&x))
	<-c
	runtime.KeepAlive(&x)
}

//go:noinline
func victimReason(c chan struct{}) {
	var x int
	victimAt[2] = uintptr(unsafe.Pointer(&x))
	<-c
	runtime.KeepAlive(&x)
}

//go:noinline
func parked(c chan struct{}) { <-c }

//go:noinline
func labeled() {
	for {
		for i := 0; i < 200000; i++ {
			spinsum += uint64(i)
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

func die(f string, a ...interface{}) {
	fmt.Printf("symbols missing: "+f+"\n", a...)
	os.Exit(3)
}

// symbols: the runtime addresses of runtime.allgs and runtime.mbuckets, and
// the offset of runtime.g's waitreason, from the program's own symbol table
// and DWARF (the load bias from main.main's entry, in case it is a PIE).
func symbols() (allgs, mbuckets uintptr, waitreason int64) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		die("%v", err)
	}
	syms, err := f.Symbols()
	if err != nil {
		die("%v", err)
	}
	var mainAt uint64
	for _, s := range syms {
		switch s.Name {
		case "runtime.allgs":
			allgs = uintptr(s.Value)
		case "runtime.mbuckets":
			mbuckets = uintptr(s.Value)
		case "main.main":
			mainAt = s.Value
		}
	}
	if allgs == 0 || mbuckets == 0 || mainAt == 0 {
		die("runtime.allgs %#x runtime.mbuckets %#x main.main %#x", allgs, mbuckets, mainAt)
	}
	bias := reflect.ValueOf(main).Pointer() - uintptr(mainAt)
	allgs += bias
	mbuckets += bias
	d, err := f.DWARF()
	if err != nil {
		die("dwarf: %v", err)
	}
	r := d.Reader()
	waitreason = -1
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagStructType || e.Val(dwarf.AttrName) != "runtime.g" {
			if e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
			}
			continue
		}
		for {
			m, err := r.Next()
			if err != nil || m == nil || m.Tag == 0 {
				break
			}
			if m.Val(dwarf.AttrName) == "waitreason" {
				waitreason, _ = m.Val(dwarf.AttrDataMemberLoc).(int64)
			}
		}
		break
	}
	if waitreason < 0 {
		die("runtime.g.waitreason not in DWARF")
	}
	return
}

type slice struct {
	ptr      uintptr
	len, cap uintptr
}

func gOf(allgs uintptr, at uintptr) uintptr {
	s := (*slice)(unsafe.Pointer(allgs))
	for i := uintptr(0); i < s.len; i++ {
		g := *(*uintptr)(unsafe.Pointer(s.ptr + 8*i))
		lo, hi := *(*uintptr)(unsafe.Pointer(g)), *(*uintptr)(unsafe.Pointer(g + 8))
		if lo <= at && at < hi {
			return g
		}
	}
	fmt.Println("no g holds", at)
	os.Exit(4)
	return 0
}

func main() {
	mode := flag.String("mode", "all", "allgs|stack|buckets|reason|labels|all|none")
	secs := flag.Float64("secs", 3, "seconds corrupted")
	keepIt := flag.Bool("keep", false, "exit corrupted")
	flag.Parse()
	on := func(m string) bool { return *mode == m || *mode == "all" }
	if *mode == "memprofile" { // never: keeps the heap profile linked in (else the linker turns sampling off)
		runtime.MemProfile(nil, true)
	}
	runtime.MemProfileRate = 16 << 10
	debug.SetGCPercent(-1)
	allgs, mbuckets, wr := symbols()
	fmt.Println("symbols ok")

	// every goroutine, made now: none is made once corrupted
	for i := range wake {
		wake[i] = make(chan struct{})
	}
	go victimLow(wake[0])
	go victimHuge(wake[1])
	go victimReason(wake[2])
	pc := make(chan struct{})
	for i := 0; i < 8; i++ {
		go parked(pc)
	}
	go spin()
	go allocer()
	go locker()
	go locker()
	if on("labels") {
		var lab []string
		big := strings.Repeat("v", 1<<20)
		lab = append(lab, "big", big, strings.Repeat("k", 1<<20), "bigkey")
		for i := 0; i < 100; i++ {
			lab = append(lab, fmt.Sprintf("l%03d", i), "x")
		}
		go pprof.Do(context.Background(), pprof.Labels(lab...), func(context.Context) { labeled() })
	}
	// the goroutines made by the timers and the runtime's own settle
	time.Sleep(500 * time.Millisecond)
	for victimAt[0] == 0 || victimAt[1] == 0 || victimAt[2] == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	gs := (*slice)(unsafe.Pointer(allgs))
	fmt.Println("goroutines", gs.len)
	head := *(*uintptr)(unsafe.Pointer(mbuckets))
	var nb, tail uintptr
	for b := head; b != 0 && nb < 100000; b = *(*uintptr)(unsafe.Pointer(b + 8)) {
		nb++
		tail = b
	}
	fmt.Println("buckets", nb)

	// the victims' g, found before any corruption (a g whose bounds are
	// the whole address space holds every address)
	gv := [3]uintptr{gOf(allgs, victimAt[0]), gOf(allgs, victimAt[1]), gOf(allgs, victimAt[2])}
	var restore []func()
	apply := func(m string, f func() func()) {
		if on(m) {
			restore = append(restore, f())
			fmt.Println("applied", m, ms())
		}
	}
	apply("allgs", func() func() {
		l, c := gs.len, gs.cap
		gs.cap = 1 << 40
		gs.len = 1 << 40
		return func() { gs.len, gs.cap = l, c; fmt.Println("restored allgs", ms()) }
	})
	apply("stack", func() func() {
		g0, g1 := gv[0], gv[1]
		s0 := *(*[2]uintptr)(unsafe.Pointer(g0))
		s1 := *(*[2]uintptr)(unsafe.Pointer(g1))
		*(*[2]uintptr)(unsafe.Pointer(g0)) = [2]uintptr{0x1000, 0x2000}
		*(*[2]uintptr)(unsafe.Pointer(g1)) = [2]uintptr{0, 1 << 47}
		return func() {
			*(*[2]uintptr)(unsafe.Pointer(g0)) = s0
			*(*[2]uintptr)(unsafe.Pointer(g1)) = s1
			fmt.Println("restored stack", ms())
		}
	})
	apply("buckets", func() func() {
		if tail == 0 {
			fmt.Println("no buckets")
			os.Exit(4)
		}
		p := (*uintptr)(unsafe.Pointer(tail + 8))
		old := *p
		*p = head
		return func() { *p = old; fmt.Println("restored buckets", ms()) }
	})
	apply("reason", func() func() {
		p := (*uint8)(unsafe.Pointer(gv[2] + uintptr(wr)))
		old := *p
		*p = 255
		return func() { *p = old; fmt.Println("restored reason", ms()) }
	})
	time.Sleep(time.Duration(*secs * float64(time.Second)))
	if *keepIt {
		fmt.Println("done", ms())
		os.Exit(0)
	}
	for i := len(restore) - 1; i >= 0; i-- {
		restore[i]()
	}
	time.Sleep(300 * time.Millisecond)
	fmt.Println("done", ms())
}
