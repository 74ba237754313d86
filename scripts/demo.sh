#!/bin/sh
# make demo: profile the bundled demo program (tests/go/demo: JSON decoding,
# sha256 hashing and sorting on worker goroutines, ~3 s) and show its hottest
# functions, and write its flame graph to build/demo.html.  Builds that one
# program only (Debian's Go 1.19, into build/demo/), none of the test
# fixtures.  Needs perf_event_open (root, or kernel.perf_event_paranoid <= 2).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
pm=${PMUPROF:-build/pmuprof}
[ -x "$pm" ] || { echo "demo: $pm is not built; run make" >&2; exit 1; }
GO=/usr/lib/go-1.19/bin/go
[ -x "$GO" ] || { echo "demo: no Go 1.19 at $GO (Debian's golang-1.19-go: run scripts/deps.sh build)" >&2; exit 1; }

# The Go build cache is $GOCACHE where set, else the one the test fixtures
# share (scripts/fixtures.sh): a checkout that built them, or an earlier
# demo, builds no standard library again.
cache=${PMUPROF_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pmuprof}
gocache=${GOCACHE:-$cache/gocache}
bin=build/demo/demo
if [ ! -x "$bin" ] || [ -n "$(find tests/go/demo -newer "$bin" -name '*.go')" ]; then
	echo "demo: building the demo program (tests/go/demo, Go 1.19) into $bin"
	mkdir -p build/demo "$gocache"
	(unset GOROOT GOBIN GOOS GOARCH GOAMD64 CGO_ENABLED CC GOFLAGS &&
		cd tests/go/demo && GOENV=off GOTOOLCHAIN=local GO111MODULE=off \
		GOPATH="$top/build/demo/gopath" GOCACHE="$gocache" "$GO" build -o "$top/$bin" .)
fi
tmp=$(mktemp -d /tmp/pmuprof-demo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "demo: profiling it for about 3 s"
echo
echo "\$ pmuprof record -e cpu-clock -o demo.pb.gz -- $bin"
"$pm" record -e cpu-clock -o "$tmp/demo.pb.gz" -- "$bin"
echo
echo "\$ pmuprof report -i demo.pb.gz --top 15"
"$pm" report -i "$tmp/demo.pb.gz" --top 15
echo
echo "\$ pmuprof report -i demo.pb.gz --sort cum --top 40 | grep main\\.   # the demo's own functions, with what they call"
"$pm" report -i "$tmp/demo.pb.gz" --sort cum --top 40 | grep -E '^ *Self|main\.'
echo
echo "\$ pmuprof report -i demo.pb.gz --html build/demo.html   # the flame graph: open it in a browser"
mkdir -p build
"$pm" report -i "$tmp/demo.pb.gz" --html build/demo.html
