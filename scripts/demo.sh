#!/bin/sh
# make demo: profile the bundled demo program (tests/go/demo: JSON decoding,
# sha256 hashing and sorting on worker goroutines, ~3 s) and show its hottest
# functions, and write its flame graph to build/demo.html.  Needs
# perf_event_open (root, or kernel.perf_event_paranoid <= 2).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
pm=${PMUPROF:-build/pmuprof}
[ -x "$pm" ] || { echo "demo: $pm is not built; run make" >&2; exit 1; }
./scripts/fixtures.sh
tmp=$(mktemp -d /tmp/pmuprof-demo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "\$ pmuprof record -e cpu-clock -o demo.pb.gz -- tests/.work/go/demo"
"$pm" record -e cpu-clock -o "$tmp/demo.pb.gz" -- "${PMUPROF_FIXTURES:-tests/.work}/go/demo"
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
