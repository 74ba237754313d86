// ticker: calls main.tick at a steady rate, and says how many times in
// each second of the wall clock: the truth an agent's intervals are cut
// against.  It ticks only from 100 ms to 900 ms into each second, so that
// a call is never near a second's edge.  Usage: ticker SECONDS; it prints
// "second UNIX N" lines and "ticks N" at the end (or at SIGTERM).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

var sink uint64

//go:noinline
func tick(i uint64) {
	sink += i
}

func main() {
	secs := 5
	if len(os.Args) > 1 {
		secs, _ = strconv.Atoi(os.Args[1])
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	counts := map[int64]int{}
	var order []int64
	end := time.Now().Add(time.Duration(secs) * time.Second)
	fmt.Printf("pid %d\n", os.Getpid())
loop:
	for time.Now().Before(end) {
		select {
		case <-stop:
			break loop
		default:
		}
		now := time.Now()
		ms := now.Nanosecond() / 1e6
		if ms < 100 || ms >= 900 {
			time.Sleep(time.Millisecond)
			continue
		}
		s := now.Unix()
		if _, ok := counts[s]; !ok {
			order = append(order, s)
		}
		tick(uint64(ms))
		counts[s]++
		time.Sleep(500 * time.Microsecond)
	}
	total := 0
	for _, s := range order {
		fmt.Printf("second %d %d\n", s, counts[s])
		total += counts[s]
	}
	fmt.Printf("ticks %d\n", total)
}
