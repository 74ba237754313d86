#!/bin/sh
# Install the Debian packages that pmuprof needs, for what is asked:
#
#   scripts/deps.sh build   the build (make, make demo): compiler, libraries,
#                           protoc-c, scdoc, and Go 1.19 for the demo program
#   scripts/deps.sh lint    the build's, and shellcheck, clang-tidy, mandoc
#   scripts/deps.sh test    the build's, and the suite's (make check): clang,
#                           perf, valgrind, the real servers and chromium,
#                           the linters, Node.js/npm
#   scripts/deps.sh [all]   all of them
#   scripts/deps.sh --list WHAT   print WHAT's packages, one a line; install nothing
#
# Idempotent, and silent when everything is already there.
set -e
list=
if [ "${1:-}" = --list ]; then
	list=1
	shift
fi

# libcurl4-openssl-dev: the agent's pushes to its backends (lib/agent/push.c)
BUILD="build-essential pkg-config libelf-dev libdw-dev zlib1g-dev libcurl4-openssl-dev
       libprotobuf-c-dev protobuf-c-compiler scdoc golang-1.19-go"
LINT="shellcheck clang-tidy mandoc"
# clang and its runtimes: the fuzz targets (libFuzzer); time: /usr/bin/time;
# wrk and prometheus: the real-server tests; chromium: the flame-graph
# page's tests drive it headless (puppeteer-core); python3: the tests'
# helpers (the backends' read-back, tests/e2e/backend-read.py; the push
# tests' HTTP server, tests/e2e/httpsink.py)
TEST="$LINT clang libclang-rt-14-dev linux-perf valgrind time wrk prometheus chromium python3"

case ${1:-all} in
build) PKGS=$BUILD ;;
lint) PKGS="$BUILD $LINT" ;;
test | all) PKGS="$BUILD $TEST" ;;
*)
	echo "usage: $0 [--list] [build|lint|test|all]" >&2
	exit 2
	;;
esac

if [ -n "$list" ]; then
	printf '%s\n' $PKGS
	exit 0
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
# Node.js and npm (for the npm-shipped Go binaries and pprof-format) may come
# from NodeSource rather than Debian: only install Debian's when absent.
case ${1:-all} in
test | all) command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm" ;;
esac
[ -z "$missing" ] && exit 0

echo "deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
# Debian starts prometheus as a service where systemd runs: the tests start
# their own, on a port of their own
case " $missing " in
*" prometheus "*) $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true ;;
esac
