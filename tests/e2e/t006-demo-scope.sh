#!/bin/sh
# san: no
# `make demo` stays a newcomer's first minute (issue 30): it installs the
# build's packages only and builds pmuprof and the one demo program, never the
# test fixtures (three Go toolchains, npm) or the test-only packages.
# Structural: `make -n demo` (nothing run) and what scripts/demo.sh and
# `scripts/deps.sh --list build` name; no timing.
. "$(dirname "$0")/lib.sh"
cd "$top" || exit 1

# what make would run: every command of the demo's chain, recursion included
if make -n --no-print-directory demo >"$T/n" 2>"$T/n.err"; then
	pass make-n-demo
else
	fail make-n-demo "$(head -2 "$T/n.err" | tr '\n' '|')"
fi
bad=$(grep -nE 'fixtures\.sh|tests/\.work|deps\.sh($| all| test)|npm |tests/run\.sh|SAN=|/tests/test-|go12[67]' "$T/n" | head -3)
if [ -z "$bad" ]; then pass chain-no-fixtures; else fail chain-no-fixtures "make -n demo runs: $(echo "$bad" | tr '\n' '|')"; fi
if grep -q 'deps\.sh build' "$T/n" && grep -q 'scripts/demo\.sh' "$T/n"; then
	pass chain-build-deps-and-demo
else
	fail chain-build-deps-and-demo "no 'deps.sh build' or scripts/demo.sh in make -n demo"
fi

# the demo script builds tests/go/demo alone, with no fixture script
demo=$top/scripts/demo.sh
grep -v '^[[:space:]]*#' "$demo" >"$T/demo.code"
n=$(grep -c '"$GO" build' "$T/demo.code")
if ! grep -qE 'fixtures\.sh|tests/\.work|PMUPROF_FIXTURES' "$T/demo.code" && [ "$n" -eq 1 ] &&
	grep -q 'cd tests/go/demo' "$T/demo.code"; then
	pass demo-builds-one-program
else
	fail demo-builds-one-program "scripts/demo.sh: $n go builds, or names the fixtures"
fi

# the build's packages hold none of the tests' own
pk=$("$top/scripts/deps.sh" --list build 2>&1) || pk=
extra=$(printf '%s\n' $pk | grep -xE 'chromium|prometheus|wrk|valgrind|linux-perf|clang|libclang-rt-.*|nodejs|npm|shellcheck|clang-tidy' | tr '\n' ' ')
if [ -n "$pk" ] && [ -z "$extra" ] && printf '%s\n' $pk | grep -qx golang-1.19-go; then
	pass build-deps-only
else
	fail build-deps-only "scripts/deps.sh --list build: ${pk:-nothing}${extra:+; test packages: $extra}"
fi
