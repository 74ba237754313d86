// Command sysstack is a profiler test fixture whose hot work runs on the
// system stack (g0), on behalf of known goroutines:
//
//   - main.grow: a fresh goroutine recurses deeply through main.recurse, so
//     its stack grows again and again: runtime.morestack -> newstack ->
//     copystack on g0, under main.recurse <- ... <- main.grow;
//   - main.allocBig: large allocations, each a span allocated through
//     runtime.systemstack -> (*mheap).alloc.func1 on g0, under
//     main.allocBig.
//
// Every sample on g0 under those runtime functions ran for one of them.
package main

import (
	"flag"
	"fmt"
	"time"
)

//go:noinline
func recurse(n int, pad [1024]byte) int {
	if n == 0 {
		return int(pad[0])
	}
	pad[n%1024]++
	return recurse(n-1, pad) + 1
}

//go:noinline
func grow(depth int, done chan<- int) {
	done <- recurse(depth, [1024]byte{})
}

var sink []byte

//go:noinline
func allocBig(until time.Time) int {
	n := 0
	for time.Now().Before(until) {
		for i := 0; i < 64; i++ {
			sink = make([]byte, 1<<20+i*8192)
			n++
		}
	}
	return n
}

func main() {
	dur := flag.Duration("duration", 2*time.Second, "how long")
	flag.Parse()
	until := time.Now().Add(*dur)
	allocs := make(chan int)
	go func() { allocs <- allocBig(until) }()
	done := make(chan int)
	grows := 0
	for time.Now().Before(until) {
		go grow(100, done)
		<-done
		grows++
	}
	fmt.Println("grows", grows, "allocs", <-allocs)
}
