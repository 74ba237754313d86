// Command burst is a profiler test fixture: one burst of calls to
// main.(*counter).tick, as fast as the main goroutine can make them, then
// it prints how many it made ("ticks N").  A uprobe on tick sampled every
// call (-c 1) must give exactly N samples and lose none.
//
//	burst [-linger] [N]   N calls (default 7777)
//
// With -linger it is a target to attach to (pmuprof record -p): it prints
// "ready pid=PID threads=T", waits for a SIGUSR1, makes the burst, prints
// "ticks N threads=T" (T: its OS threads, from /proc/self/task) and stays
// alive and quiet (no call, no thread, no mapping made) until a SIGTERM or
// SIGINT, when it exits 0.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

type counter struct{ n int }

//go:noinline
func (c *counter) tick() { c.n++ }

func main() {
	linger := flag.Bool("linger", false, "wait for SIGUSR1 before the burst, stay until SIGTERM after it")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: burst [-linger] [N]") }
	flag.Parse()
	n := 7777
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	if flag.NArg() == 1 {
		v, err := strconv.Atoi(flag.Arg(0))
		if err != nil || v < 0 {
			flag.Usage()
			os.Exit(2)
		}
		n = v
	}
	var start, stop chan os.Signal
	if *linger {
		start = make(chan os.Signal, 1)
		stop = make(chan os.Signal, 1)
		signal.Notify(start, syscall.SIGUSR1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		fmt.Printf("ready pid=%d threads=%d\n", os.Getpid(), threads())
		<-start
	}
	c := &counter{}
	for i := 0; i < n; i++ {
		c.tick()
	}
	if !*linger {
		fmt.Println("ticks", c.n)
		return
	}
	fmt.Printf("ticks %d threads=%d\n", c.n, threads())
	<-stop
}

// threads is the process's OS threads now (-1 when /proc says not).
func threads() int {
	ts, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return -1
	}
	return len(ts)
}
