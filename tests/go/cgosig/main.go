// Command cgosig is a profiler test fixture for samples in a C signal
// handler: a C SIGPROF handler (installed with sigaction, on the
// alternate signal stack) burns CPU in handler_burn, fired by an
// ITIMER_PROF timer while the only busy goroutine runs main.spin.  So a
// sample in handler_burn interrupted main.spin (or what it calls): the
// stack goes on through the kernel's signal frame into main.spin and on
// to runtime.goexit.
//
// At the end it prints its own accounting of the handler: "handler N calls
// M ms", M the thread CPU time spent in handler_burn (CLOCK_THREAD_CPUTIME_ID
// around it, in the handler), after a line "true".
package main

/*
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

volatile uint64_t handler_sink;
static volatile uint64_t handler_calls, handler_ns;

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void handler_burn(void)
{
	uint64_t x = handler_sink | 1;
	// Several sampling periods per call (~4 ms here): ITIMER_PROF fires on
	// the tick, so a handler shorter than one period is sampled at a phase
	// locked to the tick, and the handler's samples came out 74 to 345 of
	// its 336 CPU-time worth from one run to the next.  Over many periods
	// a call is off by at most one sample.
	for (int i = 0; i < 4000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	handler_sink = x;
}

static void on_prof(int sig)
{
	uint64_t t0 = thread_ns();

	(void)sig;
	handler_burn();
	__atomic_add_fetch(&handler_ns, thread_ns() - t0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&handler_calls, 1, __ATOMIC_RELAXED);
}

static uint64_t get_calls(void) { return __atomic_load_n(&handler_calls, __ATOMIC_RELAXED); }
static uint64_t get_ns(void) { return __atomic_load_n(&handler_ns, __ATOMIC_RELAXED); }

static int start_timer(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } }; // 20 ms of CPU: the handler ~1/6 of it

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		return -1;
	return setitimer(ITIMER_PROF, &it, NULL);
}

static void stop_timer(void)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
}
*/
import "C"

import (
	"flag"
	"fmt"
	"time"
)

//go:noinline
func spin(until time.Time) uint64 {
	x := uint64(1)
	for time.Now().Before(until) {
		for i := 0; i < 100000; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	return x
}

func main() {
	dur := flag.Duration("duration", 2*time.Second, "how long")
	flag.Parse()
	if C.start_timer() != 0 {
		panic("setitimer")
	}
	done := make(chan uint64)
	go func() { done <- spin(time.Now().Add(*dur)) }()
	x := <-done
	C.stop_timer()
	fmt.Println(x != 0)
	fmt.Printf("handler %d calls %.1f ms\n", uint64(C.get_calls()), float64(C.get_ns())/1e6)
}
