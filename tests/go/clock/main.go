// clock: calls time.Now in a loop for -duration, so that most samples are
// in the vDSO's clock_gettime (under runtime.nanotime1 / walltime).
package main

import (
	"flag"
	"fmt"
	"time"
)

//go:noinline
func tick(n int) int64 {
	var s int64
	for i := 0; i < n; i++ {
		s += time.Now().UnixNano() & 1
	}
	return s
}

func main() {
	d := flag.Duration("duration", time.Second, "run this long")
	flag.Parse()
	var s int64
	for start := time.Now(); time.Since(start) < *d; {
		s += tick(10000)
	}
	fmt.Println("clock", s > 0)
}
