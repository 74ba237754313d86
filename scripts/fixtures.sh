#!/bin/sh
# Build the Go test fixtures and install the npm-shipped ones, into
# $PMUPROF_FIXTURES (default tests/.work).  Idempotent: rebuilds only what is
# older than its source.
#
#   go/<name>           tests/go/<name>/*.go built with Debian's Go 1.19
#   go/<name>-stripped  the same with -ldflags='-s -w'
#   go126/, go127/      the same with Go 1.26 (/usr/local/go) and Go 1.27.3
#   A fixture with a go.mod (its modules fetched through the Go module proxy
#   into $cache/gopath/pkg/mod, checked against its go.sum) builds in module
#   mode, the others in GOPATH mode.
#   npm/node_modules/   @esbuild/linux-x64 (Go 1.26), lefthook-linux-x64
#                       (Go 1.27), pprof-format (an independent pprof decoder),
#                       puppeteer-core (drives Debian's chromium; it downloads
#                       no browser) and speedscope (a flame-graph viewer)
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
work=${PMUPROF_FIXTURES:-$top/tests/.work}
# The fixtures name their toolchain: Debian's Go 1.19, whatever `go` on PATH
# is (Go 1.26 at /usr/local/go on the project's machines) and whatever the
# environment or the user's go/env file says (GOROOT, GOFLAGS, GOTOOLCHAIN).
GO=/usr/lib/go-1.19/bin/go
if [ ! -x "$GO" ]; then
	echo "fixtures: no Go 1.19 at $GO (Debian's golang-1.19-go: run scripts/deps.sh)" >&2
	exit 1
fi
unset GOROOT GOBIN GOOS GOARCH GOAMD64 CGO_ENABLED CC
mkdir -p "$work/go" "$work/npm"
# Go's build and module caches live outside the checkout, shared by every
# checkout on the machine as Go's caches are made to be (content-addressed,
# safe for builds running at once): a fresh clone neither rebuilds the
# standard library of three toolchains nor fetches Go 1.27.3 again.
# $work/gocache* and $work/gopath are links to them (a checkout that has
# them as directories keeps its build caches; the module cache and the
# fetched toolchain are always the shared ones, so that the paths the
# binaries name are too).  PMUPROF_CACHE=DIR puts them elsewhere.
cache=${PMUPROF_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pmuprof}
for d in gocache gocache-go126 gocache-go127 gopath; do
	mkdir -p "$cache/$d"
	[ -e "$work/$d" ] || [ -L "$work/$d" ] || ln -s "$cache/$d" "$work/$d"
done
export GOENV=off GOTOOLCHAIN=local GOCACHE="$work/gocache" GOFLAGS=-mod=mod GO111MODULE=off GOPATH="$cache/gopath"
# modmode DIR: the GO111MODULE a fixture builds with (on where it has a go.mod)
modmode() { if [ -f "$1/go.mod" ]; then echo on; else echo off; fi; }

# Built fixtures are kept in the same cache, by a key of the toolchain and
# the fixture's files ($cache/fixtures/TAG/KEY/), and copied into $work: a
# fresh clone with nothing changed copies them instead of linking ~200
# binaries again.  They build from a copy of the sources at
# $cache/fixtures/src/SKEY/tests/go/NAME, so that the paths a binary names
# (its files, with the checkout's tail tests/go/NAME) are the same wherever
# the checkout lives.  $work/TAG/.NAME.key says what $work/TAG/NAME is.
store=$cache/fixtures
# srckey NAME: a hash of a fixture's files, names and contents (from
# $work/.sums, every fixture file's sum, made once a run)
(cd "$top/tests/go" && find . -type f | LC_ALL=C sort | xargs sha256sum) >"$work/.sums"
srckey() { grep -F "  ./$1/" "$work/.sums" | sha256sum | cut -c1-20; }

# build_set TAG GO GOCACHE: every fixture with GO into $work/TAG
build_set() {
	_tag=$1 _go=$2 _gocache=$3
	mkdir -p "$work/$_tag" "$store/$_tag" "$store/src"
	_gov=$("$_go" version) || { echo "fixtures: $_go does not run" >&2; return 1; }
	for dir in "$top"/tests/go/*/; do
		name=$(basename "$dir")
		skey=$(srckey "$name")
		key=$(printf 'fixtures-v1 %s %s %s %s\n' "$_gov" "$_go" "$name" "$skey" | sha256sum | cut -c1-20)
		out=$work/$_tag/$name
		if [ -x "$out" ] && [ -x "$out-stripped" ] && [ "$(cat "$work/$_tag/.$name.key" 2>/dev/null)" = "$key" ]; then
			continue
		fi
		if [ ! -x "$store/$_tag/$key/$name-stripped" ]; then
			fixture_build "$dir" "$skey" "$name" "$store/$_tag/$key" "$_go" "$_gocache" ||
				{ echo "fixtures: cannot build $name with $_go" >&2; return 1; }
		fi
		touch "$store/$_tag/$key"
		cp -f "$store/$_tag/$key/$name" "$out.tmp" && mv -f "$out.tmp" "$out" &&
			cp -f "$store/$_tag/$key/$name-stripped" "$out.tmp" && mv -f "$out.tmp" "$out-stripped" &&
			echo "$key" >"$work/$_tag/.$name.key" || return 1
	done
}

# fixture_build DIR SKEY NAME DEST GO GOCACHE: build DIR's copy into DEST/NAME
# and DEST/NAME-stripped (DEST appears whole or not at all)
fixture_build() {
	_src=$store/src/$2/tests/go/$3
	if [ ! -d "$_src" ]; then
		mkdir -p "$store/src/$2.$$/tests/go" && cp -R "$1" "$store/src/$2.$$/tests/go/$3" &&
			{ mv "$store/src/$2.$$" "$store/src/$2" 2>/dev/null || rm -rf "$store/src/$2.$$"; }
	fi
	[ -d "$_src" ] || return 1
	touch "$store/src/$2"
	_tmp=$4.$$
	rm -rf "$_tmp" && mkdir -p "$_tmp" &&
		(cd "$_src" && GO111MODULE=$(modmode "$_src") && export GO111MODULE && export GOCACHE="$6" &&
			"$5" build -o "$_tmp/$3" . && "$5" build -ldflags='-s -w' -o "$_tmp/$3-stripped" .) &&
		{ mv "$_tmp" "$4" 2>/dev/null || [ -x "$4/$3-stripped" ]; } ||
		{ rm -rf "$_tmp"; return 1; }
	rm -rf "$_tmp"
}

# The same fixtures are built with Debian's Go 1.19 (go/) and with current
# Go, for the tests that check the same truths on each version: go126/ with
# the Go 1.26 at /usr/local/go, go127/ with Go 1.27.3, which that go command
# fetches through the module proxy into $cache/gopath (GOTOOLCHAIN needs
# module mode to switch; the fixtures build in GOPATH mode with the fetched
# toolchain's own go command).  A toolchain that is not there is said in one
# line, and its tests skip.  The go command of each is kept in
# $work/go126.go and go127.go, for the tests that run its tools.
build_119() { build_set go "$GO" "$work/gocache"; }
build_all() { build_set "$1" "$2" "$work/gocache-$1"; }
# The three toolchains build at once (the links are single-threaded).
build_119 &
p119=$!
GO126=/usr/local/go/bin/go
p126=
case $("$GO126" version 2>/dev/null) in
*" go1.26"*) { build_all go126 "$GO126" && echo "$GO126" >"$work/go126.go"; } & p126=$! ;;
*) echo "fixtures: no Go 1.26 at $GO126: the Go 1.26 fixtures are not built" >&2 ;;
esac
GO127=$(GOTOOLCHAIN=go1.27.3 GO111MODULE=on GOFLAGS=-modcacherw "$GO126" env GOROOT 2>/dev/null)/bin/go
p127=
case $("$GO127" version 2>/dev/null) in
*" go1.27"*) { build_all go127 "$GO127" && echo "$GO127" >"$work/go127.go"; } & p127=$! ;;
*) echo "fixtures: Go 1.27.3 could not be fetched (GOTOOLCHAIN=go1.27.3): the Go 1.27 fixtures are not built" >&2 ;;
esac
failed=
for p in $p119 $p126 $p127; do
	wait "$p" || failed=1
done
[ -z "$failed" ] || exit 1
# what no build used for 30 days goes
find "$store" -mindepth 2 -maxdepth 2 -type d -mtime +30 -exec rm -rf {} + 2>/dev/null || true

# An arm64 build of the symbolizer fixture (the tables differ: pc quantum 4).
if [ ! -f "$work/go/symtest-arm64" ] || [ -n "$(find "$top/tests/go/symtest" -newer "$work/go/symtest-arm64" -name '*.go')" ]; then
	(cd "$top/tests/go/symtest" && GOARCH=arm64 "$GO" build -o "$work/go/symtest-arm64" .)
fi

# The golden capture (tests/fixtures/shares.data) names its binary by path and
# build ID, and a Go build embeds the source path: build that one copy at a
# fixed path, independent of where the checkout lives, so it is the same
# binary (same build ID) on every machine.
golden=${PMUPROF_GOLDEN:-/tmp/pmuprof-golden}
gsrc=$golden/src/shares
if [ ! -x "$golden/go/shares" ] || ! cmp -s "$top/tests/go/shares/main.go" "$gsrc/main.go"; then
	rm -rf "$golden" && mkdir -p "$gsrc" "$golden/go" "$golden/gocache"
	cp "$top/tests/go/shares/main.go" "$gsrc/main.go"
	(cd "$gsrc" && GOCACHE="$golden/gocache" "$GO" build -o "$golden/go/shares" .)
fi
# fuzz-replay's seeds of --locks, --alloc, --wall and --inuse
# (tests/fuzz/corpus/fuzz-replay/) name these by path: built there the same
# way, so that they unwind and symbolize for real
for name in locks alloc wallwait; do
	if [ ! -x "$golden/go/$name" ] || ! cmp -s "$top/tests/go/$name/main.go" "$golden/src/$name/main.go"; then
		mkdir -p "$golden/src/$name" "$golden/go" "$golden/gocache"
		cp "$top/tests/go/$name/main.go" "$golden/src/$name/main.go"
		(cd "$golden/src/$name" && GOCACHE="$golden/gocache" "$GO" build -o "$golden/go/$name" .)
	fi
done

# npm packages: versions pinned, scripts not run, nothing committed.
if [ ! -f "$work/npm/.done-v2" ]; then
	(cd "$work/npm" &&
		{ [ -f package.json ] || echo '{"name":"pmuprof-fixtures","private":true}' > package.json; } &&
		npm install --ignore-scripts --no-audit --no-fund --silent \
			@esbuild/linux-x64@0.28 lefthook-linux-x64@2.2 pprof-format@2 \
			puppeteer-core@25 speedscope@1 >/dev/null 2>&1) ||
		{ echo "fixtures: npm install failed; tests that need npm packages will skip" >&2; exit 0; }
	touch "$work/npm/.done-v2"
fi
