// Command allocoff is a profiler test fixture: a program that never uses
// the heap profile (no runtime/pprof, no net/http/pprof), so that its
// linker turns the runtime's heap sampling off.  After -delay, it
// allocates -n objects of 4 KiB in main.page (a millisecond's sleep every
// -pace of them) and prints "allocated N";
// with -wait, it then waits for SIGUSR1 and prints "rate R", the
// runtime.MemProfileRate it has then (a profiler that changed it must
// have put it back), and exits.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

var (
	n     = flag.Int("n", 100000, "objects to allocate")
	delay = flag.Duration("delay", 0, "wait before allocating")
	pace  = flag.Int("pace", 0, "sleep a millisecond after every PACE objects (0: never)")
	wait  = flag.Bool("wait", false, "then wait for SIGUSR1 and print runtime.MemProfileRate")
	sink  []byte
)

//go:noinline
func page() { sink = make([]byte, 4096) }

func main() {
	flag.Parse()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	time.Sleep(*delay)
	for i := 0; i < *n; i++ {
		page()
		if *pace > 0 && i%*pace == *pace-1 {
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Println("allocated", *n)
	if *wait {
		<-usr1
		fmt.Println("rate", runtime.MemProfileRate)
	}
}
