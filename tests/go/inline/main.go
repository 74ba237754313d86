// Command inline is a profiler test fixture: a hot call chain whose two
// inner functions the compiler inlines.  main.outer calls main.mid, which
// calls main.mix; built normally, mid and mix are inlined into outer (one
// physical frame, three logical ones); built with -gcflags=-l, they are
// real calls.  Both must give the same logical stacks:
// main.main -> main.outer -> main.mid -> main.mix.
package main

import (
	"flag"
	"fmt"
)

var sink uint64

func mix(x uint64) uint64 {
	x ^= x << 13 // MIX-BODY
	x ^= x >> 7
	x ^= x << 17
	return x
}

func mid(x uint64) uint64 {
	return mix(x) + 1 // MID-CALL
}

//go:noinline
func outer(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x = mid(x) // OUTER-CALL
	}
	return x
}

func main() {
	scale := flag.Float64("scale", 1, "work scale")
	flag.Parse()
	sink = outer(int(*scale * 400_000_000))
	fmt.Println(sink != 0)
}
