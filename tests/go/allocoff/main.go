// Command allocoff is a profiler test fixture: a program that never uses
// the heap profile (no runtime/pprof, no net/http/pprof), so that its
// linker turns the runtime's heap sampling off.  It allocates -n objects
// of 4 KiB and prints "allocated N".
package main

import (
	"flag"
	"fmt"
)

var (
	n    = flag.Int("n", 100000, "objects to allocate")
	sink []byte
)

//go:noinline
func page() { sink = make([]byte, 4096) }

func main() {
	flag.Parse()
	for i := 0; i < *n; i++ {
		page()
	}
	fmt.Println("allocated", *n)
}
