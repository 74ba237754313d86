// hostnames: a program whose own strings are hostile to a terminal.  It
// burns CPU in main.spinXXXXXXXXXXXX, a name the tests patch in the binary
// (same length) to hold escape bytes, under a pprof label whose value holds
// ESC and a raw C1 CSI byte; copied to a path (and so a comm) with escape
// bytes by the test.  Usage: hostnames [DURATION]; prints its pid first.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

var sink int

//go:noinline
func spinXXXXXXXXXXXX(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	d := 2 * time.Second
	if len(os.Args) > 1 {
		if v, err := time.ParseDuration(os.Args[1]); err == nil {
			d = v
		}
	}
	fmt.Println("pid", os.Getpid())
	start := time.Now()
	pprof.Do(context.Background(), pprof.Labels("tenant", "a\x1b[31mb\x9bc"), func(context.Context) {
		for time.Since(start) < d {
			sink += spinXXXXXXXXXXXX(100000)
		}
	})
}
