// Command demo is the program that `make demo` profiles: a small stand-in
// for a server that decodes JSON requests, hashes their payloads and sorts
// the results, on a few worker goroutines, for about 3 seconds (-duration).
package main

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

type request struct {
	ID      int               `json:"id"`
	User    string            `json:"user"`
	Tags    []string          `json:"tags"`
	Attrs   map[string]string `json:"attrs"`
	Payload string            `json:"payload"`
}

type result struct {
	ID    int
	User  string
	Score uint64
	Sum   [32]byte
}

// makeBatch builds the JSON of one batch of n requests.
func makeBatch(seed, n int) []byte {
	reqs := make([]request, n)
	for i := range reqs {
		k := seed*n + i
		reqs[i] = request{
			ID:      k,
			User:    fmt.Sprintf("user-%05d", (k*7919)%10007),
			Tags:    []string{"alpha", "beta", fmt.Sprint("t", k%13)},
			Attrs:   map[string]string{"region": fmt.Sprint("r", k%5), "tier": "gold"},
			Payload: strings.Repeat(fmt.Sprintf("%08x", k*2654435761), 64),
		}
	}
	b, err := json.Marshal(reqs)
	if err != nil {
		panic(err)
	}
	return b
}

//go:noinline
func parseRequests(b []byte) []request {
	var reqs []request
	if err := json.Unmarshal(b, &reqs); err != nil {
		panic(err)
	}
	return reqs
}

//go:noinline
func hashPayloads(reqs []request) []result {
	out := make([]result, len(reqs))
	for i, r := range reqs {
		sum := sha256.Sum256([]byte(r.Payload))
		for j := 0; j < 24; j++ { /* key stretching, the expensive part */
			sum = sha256.Sum256(sum[:])
		}
		out[i] = result{ID: r.ID, User: r.User, Sum: sum,
			Score: uint64(sum[0])<<8 | uint64(sum[1])}
	}
	return out
}

//go:noinline
func sortResults(res []result) {
	for pass := 0; pass < 6; pass++ {
		sort.Slice(res, func(i, j int) bool {
			if res[i].Score != res[j].Score {
				return res[i].Score < res[j].Score
			}
			return res[i].User < res[j].User
		})
		sort.Slice(res, func(i, j int) bool { return res[i].ID < res[j].ID })
	}
}

func worker(batch []byte, deadline time.Time, handled *int) {
	for time.Now().Before(deadline) {
		res := hashPayloads(parseRequests(batch))
		sortResults(res)
		*handled += len(res)
	}
}

func main() {
	dur := flag.Duration("duration", 3*time.Second, "how long to serve")
	flag.Parse()
	workers := runtime.GOMAXPROCS(0)
	deadline := time.Now().Add(*dur)
	counts := make([]int, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		batch := makeBatch(w, 400)
		go func(w int) {
			defer wg.Done()
			worker(batch, deadline, &counts[w])
		}(w)
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	fmt.Fprintf(os.Stderr, "demo: handled %d requests on %d workers in %v\n", total, workers, *dur)
}
