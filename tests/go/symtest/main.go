// symtest: a fixture for the symbolizer tests (tests/unit/test-gopclntab.c,
// test-symtab.c).  The tests find the lines below by their MARK comments, so
// moving code around is fine; keep each MARK on the line it names.
package main

import (
	"fmt"
	"os"
	"strconv"
)

var sink int

// inlAdd is small enough to be inlined into its callers.
func inlAdd(a, b int) int {
	return symLeaf(a)*b + 3 // MARK:inlAdd-body
}

//go:noinline
func symCaller(n int) int {
	x := 0
	for i := 0; i < n; i++ {
		x += inlAdd(i, n) // MARK:symCaller-call
	}
	return x
}

//go:noinline
func symFrame(n int) int { // MARK:symFrame-start
	var buf [64]int
	for i := range buf {
		buf[i] = i * n
	}
	s := 0
	for _, v := range buf {
		s += v
	}
	return s + symCaller(n) // MARK:symFrame-call
}

//go:noinline
func symLeaf(a int) int {
	return a ^ 0x5a // MARK:symLeaf-body (frameless: its first instruction is here)
}

func main() {
	n := 10
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	sink = symFrame(n) + symLeaf(n)
	fmt.Println(sink)
}
