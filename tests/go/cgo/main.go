// Command cgo is a profiler test fixture: a goroutine calls into C that
// burns CPU.  The hot stack is one continuous stack across the cgo call:
// cburn_inner <- cburn (C, on the system stack) <- runtime.asmcgocall <-
// runtime.cgocall <- main._Cfunc_cburn <- main.worker <- runtime.goexit.
package main

/*
#include <stdint.h>

static __attribute__((noinline)) uint64_t cburn_inner(uint64_t x, long n)
{
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

uint64_t cburn(long n)
{
	uint64_t acc = 0;
	for (int i = 0; i < 10; i++)
		acc += cburn_inner((uint64_t)i | 1, n / 10);
	return acc;
}
*/
import "C"

import (
	"flag"
	"fmt"
)

//go:noinline
func worker(n int, done chan<- uint64) {
	done <- uint64(C.cburn(C.long(n)))
}

func main() {
	scale := flag.Float64("scale", 1, "work scale")
	flag.Parse()
	done := make(chan uint64)
	go worker(int(*scale*400_000_000), done)
	fmt.Println(<-done != 0)
}
