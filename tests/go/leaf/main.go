// Command leaf is a profiler test fixture: almost all of its time is in
// main.leaf, a leaf function with no frame at all (no locals, no calls:
// the compiler sets up neither a stack frame nor a frame pointer), called
// from main.work, called from main.main.  A frame-pointer unwinder loses
// main.work there; no sample may.
package main

import (
	"flag"
	"fmt"
)

var sink uint64

//go:noinline
func leaf(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func work(n int) uint64 {
	var acc uint64
	for i := 0; i < 100; i++ {
		acc += leaf(uint64(i)|1, n/100)
	}
	return acc
}

func main() {
	scale := flag.Float64("scale", 1, "work scale")
	flag.Parse()
	sink = work(int(*scale * 400_000_000))
	fmt.Println(sink != 0)
}
