#!/bin/sh
# Build the OpenTelemetry eBPF profiler (go.opentelemetry.io/ebpf-profiler,
# its standalone agent: the module's root package, the compiled eBPF blob
# embedded), and the OTLP sink it needs, from Go modules fetched through
# the Go module proxy, into the cache shared by every checkout:
#
#   $cache/backends/otel-ebpf-VERSION/ebpf-profiler   the profiler
#   $cache/backends/otel-ebpf-VERSION/sink            tests/gomod/otel-ebpf/sink:
#       an OTLP profiles gRPC receiver that counts and drops (the profiler
#       does not start without a reachable collection agent)
#
# For scripts/bench-agent.sh's otel-ebpf way: what a second eBPF-based
# whole-host profiler costs the same fleet.  The proxy does not list the
# module's versions (weekly tags v0.0.YYYYWW); VERSION is the newest it
# served when tests/gomod/otel-ebpf was written (go get -tool ...@VERSION).
# One patch (tests/gomod/otel-ebpf/memlock.patch): the profiler raises
# RLIMIT_MEMLOCK to infinity around every eBPF load and gives up when it
# cannot, which it cannot without CAP_SYS_RESOURCE (containers); the patch
# goes on with the limit as it is, which kernels since 5.11 do not apply to
# eBPF.  So the module is copied from the module cache, patched, and the
# build replaces the module with the copy.
#
# Usage: scripts/otel-ebpf.sh [-c]   prints the profiler's path, then the sink's
# Idempotent: rebuilt only when the stamp (the Go toolchain, go.mod, go.sum,
# the sink's source) changed.  -c: build nothing, fail where not built.
# Fails with one line on stderr (build log: $cache/backends/otel-ebpf.log).
# Cold: a few minutes of 2 CPUs, the modules shared with scripts/backends.sh.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${PMUPROF_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pmuprof}
src=$top/tests/gomod/otel-ebpf
VERSION=$(awk '$1 == "go.opentelemetry.io/ebpf-profiler" { print $2 }' "$src/go.mod")
dir=$cache/backends/otel-ebpf-$VERSION
bin=$dir/ebpf-profiler
log=$cache/backends/otel-ebpf.log

GO=/usr/local/go/bin/go
[ -x "$GO" ] || GO=$(command -v go) || { echo "otel-ebpf: no Go toolchain (go)" >&2; exit 1; }
unset GOROOT GOBIN GOOS GOARCH GOAMD64 CC
export GOENV=off GOTOOLCHAIN=local GOWORK=off GO111MODULE=on CGO_ENABLED=0 \
	GOMODCACHE="$cache/gopath/pkg/mod" GOCACHE="$cache/gocache-backends" GOFLAGS=
[ -n "$VERSION" ] || { echo "otel-ebpf: no ebpf-profiler version in $src/go.mod" >&2; exit 1; }

key=$({
	"$GO" version
	cat "$src/go.mod" "$src/go.sum" "$src/sink/main.go" "$src/memlock.patch"
} | sha256sum | cut -c1-16)
ready() { [ -x "$bin" ] && [ -x "$dir/sink" ] && [ "$(cat "$bin.stamp" 2>/dev/null)" = "$key" ]; }

# the module patched (a writable copy: the module cache is read-only) and
# tests/gomod/otel-ebpf copied beside it, that copy's go.mod replacing the
# module with it.  -mod=readonly: go.sum is committed.
build() {
	mod=go.opentelemetry.io/ebpf-profiler
	"$GO" mod download "$mod@$VERSION" &&
		from=$("$GO" list -m -f '{{.Dir}}' "$mod@$VERSION") &&
		rm -rf "$dir/src" "$dir/build" && cp -R "$from" "$dir/src" && chmod -R u+w "$dir/src" &&
		patch -d "$dir/src" -p1 <"$src/memlock.patch" &&
		cp -R "$src" "$dir/build" && cd "$dir/build" &&
		"$GO" mod edit -replace "$mod=../src" &&
		"$GO" build -mod=readonly -trimpath -o "$bin.new" "$mod" &&
		"$GO" build -mod=readonly -trimpath -o "$dir/sink.new" ./sink &&
		mv -f "$dir/sink.new" "$dir/sink" && mv -f "$bin.new" "$bin" &&
		rm -rf "$dir/src" "$dir/build"
}

if ! ready; then
	if [ "${1:-}" = -c ]; then
		echo "otel-ebpf: $VERSION is not built (scripts/otel-ebpf.sh)" >&2
		exit 1
	fi
	mkdir -p "$dir"
	# checkouts building at once wait for the first
	exec 9>"$cache/backends/otel-ebpf.lock"
	flock 9
	if ! ready; then
		echo "otel-ebpf: building ebpf-profiler $VERSION (log $log)" >&2
		# the machine is shared: everyone else's processes come first
		renice -n 10 -p $$ >/dev/null 2>&1 || true
		if ! (build) >"$log" 2>&1; then
			echo "otel-ebpf: cannot build ebpf-profiler $VERSION: $(grep -v '^go: downloading' "$log" | tail -1)" >&2
			exit 1
		fi
		echo "$key" >"$bin.stamp"
	fi
	exec 9>&-
fi
echo "$bin"
echo "$dir/sink"
