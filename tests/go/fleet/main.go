// fleet: one of the many Go processes of scripts/bench-agent.sh, shaped
// like a small service: a handler goroutine per request, handed work over
// a channel, each request hashing a buffer and allocating its reply.  It
// runs until SIGTERM; at each SIGUSR1 and at the end it prints "ops N":
// the requests it completed so far, the throughput the bench compares
// with and without a profiler.
package main

import (
	"fmt"
	"hash/crc32"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

var ops atomic.Int64

//go:noinline
func handle(buf []byte, seed uint32) []byte {
	for i := range buf {
		buf[i] = byte(seed) + byte(i)
	}
	sum := crc32.ChecksumIEEE(buf)
	reply := make([]byte, 64+int(sum%64))
	reply[0] = byte(sum)
	return reply
}

func worker(reqs <-chan uint32) {
	buf := make([]byte, 4096)
	for seed := range reqs {
		done := make(chan []byte, 1)
		go func() { done <- handle(buf, seed) }()
		<-done
		ops.Add(1)
	}
}

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	usr := make(chan os.Signal, 8)
	signal.Notify(usr, syscall.SIGUSR1)
	go func() {
		for range usr {
			fmt.Printf("ops %d\n", ops.Load())
		}
	}()
	reqs := make(chan uint32, 64)
	for i := 0; i < 2; i++ {
		go worker(reqs)
	}
	go func() {
		for seed := uint32(0); ; seed++ {
			reqs <- seed
		}
	}()
	<-stop
	fmt.Printf("ops %d\n", ops.Load())
}
