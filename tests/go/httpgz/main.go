// Command httpgz is a profiler test fixture: a net/http server whose
// responses are gzip'd on every request, so that both compression (user
// CPU) and the writes to the socket (kernel CPU, under a syscall's Go frame)
// cost, with Go's own profiler at /debug/pprof/ (net/http/pprof) to compare
// an outside profile with.
//
// GET /page?kb=N answers N KiB (default 64) of generated text, compressed
// with compress/gzip at -level; /debug/pprof/profile?seconds=N is
// runtime/pprof's CPU profile of the next N seconds.  It listens on -addr
// (default 127.0.0.1:0, any free port) and prints "listening HOST:PORT"
// once it accepts connections; it serves until killed.
package main

import (
	"compress/gzip"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"strconv"
	"sync"
)

var (
	addr  = flag.String("addr", "127.0.0.1:0", "address to listen on")
	level = flag.Int("level", gzip.DefaultCompression, "gzip level of the responses")
	page  []byte
	pool  sync.Pool
)

// makePage returns n bytes of text that compresses like a web page: words
// from a small vocabulary in an order that does not repeat exactly.
func makePage(n int) []byte {
	words := []string{"profile", "goroutine", "sample", "kernel", "stack", "frame",
		"runtime", "<div class=\"row\">", "</div>\n", "the", "of", "and", "pprof", "cpu"}
	b := make([]byte, 0, n)
	x := uint32(2463534242)
	for len(b) < n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b = append(b, words[x%uint32(len(words))]...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(x%1000), 10)
		b = append(b, ' ')
	}
	return b[:n]
}

func handlePage(w http.ResponseWriter, r *http.Request) {
	kb := 64
	if s := r.URL.Query().Get("kb"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 && v <= len(page)/1024 {
			kb = v
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Encoding", "gzip")
	zw, _ := pool.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(w, *level)
	} else {
		zw.Reset(w)
	}
	zw.Write(page[:kb*1024])
	zw.Close()
	pool.Put(zw)
}

func main() {
	flag.Parse()
	if *level < gzip.HuffmanOnly || *level > gzip.BestCompression {
		fmt.Fprintln(os.Stderr, "httpgz: -level must be -2..9")
		os.Exit(2)
	}
	page = makePage(1024 * 1024)
	http.HandleFunc("/page", handlePage)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpgz:", err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	os.Stdout.Sync()
	fmt.Fprintln(os.Stderr, http.Serve(ln, nil))
	os.Exit(1)
}
