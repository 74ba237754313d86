// Command goprof writes a CPU profile of itself with Go's own runtime/pprof,
// so that `pmuprof report` can be tested on a profile it did not write,
// without perf_event_open.  main.spin1 and main.spin3 do work in proportion
// 1:3 (about 0.8 s of CPU in all at -scale 1).
//
//	goprof -o cpu.pb.gz [-scale 1]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
)

const unit = 12_000_000

var sink uint64

//go:noinline
func spin1(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func spin3(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func main() {
	out := flag.String("o", "", "CPU profile to write")
	scale := flag.Float64("scale", 1, "amount of work")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: goprof -o FILE [-scale X]")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n := int(*scale * unit)
	for i := 0; i < 10; i++ {
		sink += spin1(n)
		sink += spin3(3 * n)
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
