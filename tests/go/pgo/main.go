// Command pgo is a profiler test fixture for profile-guided optimisation
// (go build -pgo=FILE): a workload whose hot call sites the compiler
// decides on from a CPU profile.  Its hot path has
//
//   - main.hotLoop calling main.mix through main.step (inlined into it),
//     a function too large to inline without a profile (cost > 80) but
//     within PGO's hot budget;
//   - main.hotLoop calling Shape.Area through an interface whose dynamic
//     type is nearly always *main.square (PGO devirtualizes it);
//   - main.warmLoop calling main.blend (also too large), a quarter of the
//     work of the hot loop,
//
// and cold call sites of the same functions in main.cold, run once.  With
// -cpuprofile FILE it writes runtime/pprof's CPU profile of its own run, so
// that an outside profiler's profile of the same run can be compared with
// it.  It runs for -duration.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

var (
	duration   = flag.Duration("duration", 3*time.Second, "run this long")
	cpuprofile = flag.String("cpuprofile", "", "write runtime/pprof's CPU profile of the run to FILE")
	sink       uint64
)

type Shape interface{ Area(k uint64) uint64 }

type square struct{ side uint64 }
type circle struct{ r uint64 }

func (s *square) Area(k uint64) uint64 {
	for j := uint64(0); j < 6; j++ {
		k = k*s.side + j
	}
	return k
}
func (c *circle) Area(k uint64) uint64 { return 3*c.r*c.r + k }

// mix is deliberately larger than the inliner's default budget (unrolled).
func mix(x, k uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	x += k * 0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	if x&1 == 0 {
		x = x*5 + 3
	} else {
		x = x*3 + 1
	}
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	x += (k + 1) * 0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	if x&1 == 0 {
		x = x*5 + 3
	} else {
		x = x*3 + 1
	}
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	x += (k + 2) * 0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	if x&1 == 0 {
		x = x*5 + 3
	} else {
		x = x*3 + 1
	}
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	x += (k + 3) * 0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	if x&1 == 0 {
		x = x*5 + 3
	} else {
		x = x*3 + 1
	}
	return x
}

// blend is as large as mix, on the warm path.
func blend(x, k uint64) uint64 {
	x += k ^ 0x2545f4914f6cdd1d
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	x *= 0x2545f4914f6cdd1d
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	if x&2 == 0 {
		x = x*7 + 5
	} else {
		x = x*9 + 1
	}
	x += (k + 1) ^ 0x2545f4914f6cdd1d
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	x *= 0x2545f4914f6cdd1d
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	if x&2 == 0 {
		x = x*7 + 5
	} else {
		x = x*9 + 1
	}
	x += (k + 2) ^ 0x2545f4914f6cdd1d
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	x *= 0x2545f4914f6cdd1d
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	if x&2 == 0 {
		x = x*7 + 5
	} else {
		x = x*9 + 1
	}
	x += (k + 3) ^ 0x2545f4914f6cdd1d
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	x *= 0x2545f4914f6cdd1d
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	if x&2 == 0 {
		x = x*7 + 5
	} else {
		x = x*9 + 1
	}
	return x
}

// step is small enough to inline anywhere: its call of mix is a call site
// inside an inlined frame.
func step(x uint64, i int) uint64 { return mix(x, uint64(i)) }

//go:noinline
func hotLoop(shapes []Shape, n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = step(x, i)
		x += shapes[i&(len(shapes)-1)].Area(x)
	}
	return x
}

//go:noinline
func warmLoop(n int) uint64 {
	x := uint64(7)
	for i := 0; i < n; i++ {
		x = blend(x, uint64(i))
	}
	return x
}

//go:noinline
func cold(shapes []Shape) uint64 {
	return mix(3, 4) + blend(5, 6) + shapes[1].Area(2)
}

func main() {
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgo:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "pgo:", err)
			os.Exit(1)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	shapes := make([]Shape, 64)
	for i := range shapes {
		shapes[i] = &square{uint64(i)}
	}
	shapes[17] = &circle{3}
	sink += cold(shapes)
	start := time.Now()
	for time.Since(start) < *duration {
		sink += hotLoop(shapes, 400_000)
		sink += warmLoop(100_000)
	}
	if sink == 42 {
		fmt.Println("unlikely")
	}
}
