// Command diffwork is the fixture of the differential flame graph (tests/e2e
// t403): one goroutine calls main.steady and main.varied in turns, varied
// with -ratio times the work of steady.  Both run the same loop body, so
// main.varied's share of the CPU is ratio/(1+ratio) and main.steady's
// 1/(1+ratio): two runs with -ratio 1 and -ratio 2 differ by one function's
// work doubled.  It prints its truth, the iterations each function ran:
//
//	diffwork steady=N varied=M
//
// -scale sets the work (1.0: about 0.7 s of CPU for -ratio 1 on a 2015-2023
// x86-64 core).
package main

import (
	"flag"
	"fmt"
	"os"
)

const unit = 200_000_000

//go:noinline
func steady(n int, x uint64) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func varied(n int, x uint64) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func main() {
	ratio := flag.Float64("ratio", 1, "main.varied's work, in units of main.steady's")
	scale := flag.Float64("scale", 1, "size of the work (1.0: about 0.7 s of CPU at -ratio 1)")
	flag.Parse()
	if *ratio <= 0 || *ratio > 100 || *scale <= 0 || *scale > 1000 {
		fmt.Fprintln(os.Stderr, "diffwork: -ratio must be in (0, 100], -scale in (0, 1000]")
		os.Exit(2)
	}
	n := int(*scale * unit)
	m := int(*ratio * *scale * unit)
	x := uint64(1)
	for round := 0; round < 20; round++ {
		x = steady(n/20, x)
		x = varied(m/20, x)
	}
	fmt.Printf("diffwork steady=%d varied=%d x=%x\n", n/20*20, m/20*20, x)
}
