#!/bin/sh
# Install every Debian package that pmuprof's build and tests need.
# Idempotent, and silent when everything is already there.
set -e

PKGS="build-essential pkg-config libelf-dev libdw-dev zlib1g-dev
      libprotobuf-c-dev protobuf-c-compiler
      golang-1.19-go scdoc mandoc clang libclang-rt-14-dev
      linux-perf valgrind time wrk prometheus chromium"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
# chromium: the flame-graph page's tests drive it headless (puppeteer-core).
# Node.js and npm (for the npm-shipped Go binaries and pprof-format) may come
# from NodeSource rather than Debian: only install Debian's when absent.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
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
