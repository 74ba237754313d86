// Command burst is a profiler test fixture: one burst of calls to
// main.(*counter).tick, as fast as the main goroutine can make them, then
// it prints how many it made ("ticks N").  A uprobe on tick sampled every
// call (-c 1) must give exactly N samples and lose none.
//
//	burst [N]   N calls (default 7777)
package main

import (
	"fmt"
	"os"
	"strconv"
)

type counter struct{ n int }

//go:noinline
func (c *counter) tick() { c.n++ }

func main() {
	n := 7777
	if len(os.Args) > 1 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil || v < 0 {
			fmt.Fprintln(os.Stderr, "usage: burst [N]")
			os.Exit(2)
		}
		n = v
	}
	c := &counter{}
	for i := 0; i < n; i++ {
		c.tick()
	}
	fmt.Println("ticks", c.n)
}
