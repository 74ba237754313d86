// wallwait: goroutines parked in known ways and known numbers, for the
// goroutine wall-clock profile (pmuprof record --wall).  Usage:
//
//	wallwait N M K SECS
//
// N goroutines block in a channel receive in main.chanWaiter, M loop in
// time.Sleep in main.sleeper, K block on a held sync.Mutex in
// main.mutexWaiter, one spins in main.busy; main waits in main.main.  It
// prints its truth: "ready MS" once every goroutine is parked (MS after
// main began), "goid FUNC ID"
// for each goroutine, and "reason FUNC REASON" with the wait reason the
// runtime itself gives each (its own goroutine profile, debug=2), then
// exits after SECS seconds.
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

var ids = make(chan string, 1<<16)

func goid() int64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	f := bytes.Fields(b[:n])
	id, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return id
}

//go:noinline
func chanWaiter(c chan int) {
	ids <- fmt.Sprintf("goid chanWaiter %d", goid())
	<-c
}

//go:noinline
func sleeper() {
	ids <- fmt.Sprintf("goid sleeper %d", goid())
	for {
		time.Sleep(200 * time.Millisecond)
	}
}

//go:noinline
func mutexWaiter(mu *sync.Mutex) {
	ids <- fmt.Sprintf("goid mutexWaiter %d", goid())
	mu.Lock()
	mu.Unlock()
}

var sink uint64

//go:noinline
func busy() {
	ids <- fmt.Sprintf("goid busy %d", goid())
	x := uint64(1)
	for {
		for i := 0; i < 1000000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}

func main() {
	start := time.Now()
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: wallwait N M K SECS")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[1])
	m, _ := strconv.Atoi(os.Args[2])
	k, _ := strconv.Atoi(os.Args[3])
	secs, _ := strconv.ParseFloat(os.Args[4], 64)
	c := make(chan int)
	var mu sync.Mutex
	mu.Lock()
	for i := 0; i < n; i++ {
		go chanWaiter(c)
	}
	for i := 0; i < m; i++ {
		go sleeper()
	}
	for i := 0; i < k; i++ {
		go mutexWaiter(&mu)
	}
	go busy()
	for i := 0; i < n+m+k+1; i++ {
		fmt.Println(<-ids)
	}
	time.Sleep(100 * time.Millisecond) // every one parked where it stays
	fmt.Printf("goid main %d\n", goid())
	var buf bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&buf, 2)
	re := regexp.MustCompile(`(?m)^goroutine \d+ \[([^,\]]+)[^\n]*\n(?:[^\n]+\n)*?main\.(chanWaiter|sleeper|mutexWaiter)\(`)
	seen := map[string]string{}
	for _, mt := range re.FindAllStringSubmatch(buf.String(), -1) {
		if _, ok := seen[mt[2]]; !ok {
			seen[mt[2]] = mt[1]
			fmt.Printf("reason %s %s\n", mt[2], mt[1])
		}
	}
	fmt.Printf("ready %d\n", time.Since(start).Milliseconds()+1)
	time.Sleep(time.Duration(secs * float64(time.Second)))
}
