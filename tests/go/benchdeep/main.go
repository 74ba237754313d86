// Command benchdeep is the deep-stack benchmark of scripts/bench.sh: two
// goroutines each recurse -depth levels (default 200, beyond the kernel's
// 127-frame callchain limit) through main.down and spin at the bottom, over
// and over, for a fixed amount of work.  Nearly every sample's stack is
// runtime.goexit -> main.main.func1 -> main.down x depth -> main.leaf, so
// "the stack reaches runtime.goexit" measures stack completeness.  It
// prints one line:
//
//	benchdeep ok x=HEX depth=N elapsed=SECONDS
package main

import (
	"flag"
	"fmt"
	"sync"
	"time"
)

const unit = 400_000_000

//go:noinline
func leaf(n int, x uint64) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func down(d, n int, x uint64) uint64 {
	if d <= 0 {
		return leaf(n, x)
	}
	return down(d-1, n, x) + 1
}

func main() {
	scale := flag.Float64("scale", 1, "work per goroutine in units of ~1 s of CPU")
	depth := flag.Int("depth", 200, "recursion depth of main.down")
	flag.Parse()
	n := int(float64(unit) * *scale)
	start := time.Now()
	res := make([]uint64, 2)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			x := uint64(g) + 1
			for left := n; left > 0; left -= 1_000_000 {
				x = down(*depth, 1_000_000, x)
			}
			res[g] = x
		}(g)
	}
	wg.Wait()
	fmt.Printf("benchdeep ok x=%x depth=%d elapsed=%.4f\n", res[0]^res[1], *depth, time.Since(start).Seconds())
}
