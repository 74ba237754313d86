#!/bin/sh
# Build the real profiling backends the agent's tests push to, from Go
# modules fetched through the Go module proxy, into the cache shared by
# every checkout on the machine (scripts/fixtures.sh's):
#
#   $cache/backends/otelcol-v0.165.0/otelcol     an OpenTelemetry Collector
#       (tests/gomod/otelcol: the OTLP receiver, the debug and file exporters)
#   $cache/backends/pyroscope-v1.9.0/pyroscope   Grafana Pyroscope's server
#       (AGPL-3.0: built and run as a test server, never linked into pmuprof)
#
# Usage: scripts/backends.sh [-c] [otelcol|pyroscope|all]   (default all)
# Prints the path of each binary, one a line.  Idempotent: a binary is
# rebuilt only when its stamp (the versions, the flags, the Go toolchain and
# the committed sources) changed; a warm check costs ~0.2 s (`go version`).
# -c (cached only): build nothing, fail where a binary is not built.
# Fails with one line on stderr (build log: $cache/backends/NAME.log).
# Cold, they take 370 and 510 CPU-seconds (3-5 min on 2 idle CPUs), 1.7 GB
# of Go build cache and 0.6 GB of modules; the tests that need them call
# this script, so that a run that selects none of them pays nothing
# (`make backends` builds both ahead).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${PMUPROF_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pmuprof}
dir=$cache/backends
cached_only=
if [ "${1:-}" = -c ]; then
	cached_only=1
	shift
fi

OTELCOL_VERSION=v0.165.0
# Pyroscope: the server's go.mod replaces its api module with ./api, which
# the module zip lacks.  The proxy serves the api module only at its own
# tags (v1.0.0, v1.5.0, v1.6.0 on 2026-12-07; no pseudo-version of the
# server's commits); api/v1.0.0 is byte for byte the api/ of the server's
# v1.9.0 tag, so v1.9.0 builds from the proxy alone.  v1.6.0's api/ is none
# of them, and the v1.6.0 server against api/v1.0.0 does not compile (its
# VCS service and query frontend lack v1.0.0's GetCommits).
PYRO_VERSION=v1.9.0
PYRO_API_VERSION=v1.0.0
# parquet-go links to the runtime's aeshash by go:linkname, which Go 1.23+
# refuses without this flag.
PYRO_LDFLAGS=-checklinkname=0

GO=/usr/local/go/bin/go
[ -x "$GO" ] || GO=$(command -v go) || { echo "backends: no Go toolchain (go)" >&2; exit 1; }
unset GOROOT GOBIN GOOS GOARCH GOAMD64 CC
unset CGO_ENABLED
export GOENV=off GOTOOLCHAIN=local GOWORK=off GO111MODULE=on \
	GOMODCACHE="$cache/gopath/pkg/mod" GOCACHE="$cache/gocache-backends" GOFLAGS=
mkdir -p "$dir"

# stamp TEXT...: the key a binary is built from
stamp() {
	{
		"$GO" version
		printf '%s\n' "$@"
	} | sha256sum | cut -c1-16
}

# ready BIN KEY: true when BIN exists and was built from KEY
ready() { [ -x "$1" ] && [ "$(cat "$1.stamp" 2>/dev/null)" = "$2" ]; }

# build NAME BIN KEY CMD...: run CMD (it writes $BIN.new) under a lock that
# makes checkouts building at once wait for the first, then install BIN
build() {
	_name=$1 _bin=$2 _key=$3
	shift 3
	mkdir -p "$(dirname "$_bin")"
	exec 9>"$dir/$_name.lock"
	flock 9
	if ! ready "$_bin" "$_key"; then
		echo "backends: building $_name (once per machine: minutes; log $dir/$_name.log)" >&2
		# the tests' own processes (and the other checkouts') come first
		renice -n 10 -p $$ >/dev/null 2>&1 || true
		if ! "$@" >"$dir/$_name.log" 2>&1; then
			echo "backends: cannot build $_name: $(grep -v '^go: downloading' "$dir/$_name.log" | tail -1)" >&2
			exec 9>&-
			return 1
		fi
		mv -f "$_bin.new" "$_bin"
		echo "$_key" >"$_bin.stamp"
	fi
	exec 9>&-
}

# -mod=readonly: go.sum is committed; a build never rewrites the checkout
otel_build() { (cd "$1" && "$GO" build -mod=readonly -trimpath -o "$2.new" .); }

otelcol() {
	src=$top/tests/gomod/otelcol
	bin=$dir/otelcol-$OTELCOL_VERSION/otelcol
	key=$(stamp "$OTELCOL_VERSION" -trimpath "$(cat "$src/main.go" "$src/go.mod" "$src/go.sum")")
	if ! ready "$bin" "$key"; then
		[ -z "$cached_only" ] || { echo "backends: otelcol is not built (scripts/backends.sh otelcol)" >&2; return 1; }
		build otelcol "$bin" "$key" otel_build "$src" "$bin" || return 1
	fi
	echo "$bin"
}

# pyro_build SRC BIN: a writable copy of the server's module (the module
# cache is read-only), its api replaced by the proxy's module, then built
pyro_build() (
	"$GO" mod download "github.com/grafana/pyroscope@$PYRO_VERSION" &&
		mod=$("$GO" list -m -f '{{.Dir}}' "github.com/grafana/pyroscope@$PYRO_VERSION") &&
		rm -rf "$1" && mkdir -p "$(dirname "$1")" && cp -R "$mod" "$1" && chmod -R u+w "$1" &&
		cd "$1" &&
		"$GO" mod edit -replace "github.com/grafana/pyroscope/api=github.com/grafana/pyroscope/api@$PYRO_API_VERSION" &&
		"$GO" build -mod=mod -trimpath -ldflags="$PYRO_LDFLAGS" -o "$2.new" ./cmd/pyroscope
)

pyroscope() {
	bin=$dir/pyroscope-$PYRO_VERSION/pyroscope
	key=$(stamp "$PYRO_VERSION" "$PYRO_API_VERSION" "$PYRO_LDFLAGS" -trimpath)
	if ! ready "$bin" "$key"; then
		[ -z "$cached_only" ] || { echo "backends: pyroscope is not built (scripts/backends.sh pyroscope)" >&2; return 1; }
		build pyroscope "$bin" "$key" pyro_build "$dir/pyroscope-$PYRO_VERSION/src" "$bin" || return 1
	fi
	echo "$bin"
}

case ${1:-all} in
otelcol) otelcol ;;
pyroscope) pyroscope ;;
all) otelcol && pyroscope ;;
*)
	echo "usage: $0 [-c] [otelcol|pyroscope|all]" >&2
	exit 2
	;;
esac
