#!/bin/sh
# Run the whole suite and print one summary line "N passed, N failed, N skipped".
#
# 1. unit tests (build/tests/test-*), then the same under ASan+UBSan
#    (build/san/tests/test-*) when that build exists;
# 2. end-to-end tests (tests/e2e/t*.sh) against build/pmuprof, then the
#    ASan+UBSan pmuprof (tests marked "# san: no" in their first lines skip it).
#
# After each e2e file, one line "time: [label] tNNN-name S s"; before the
# summary, the slowest five.
# Every test prints lines "PASS: name", "FAIL: name" or "SKIP: name (why)";
# a file that prints none of them fails ("ran no check").
# Usage: tests/run.sh [PATTERN]   (PATTERN selects e2e scripts and unit binaries)
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
export PMUPROF_FIXTURES=${PMUPROF_FIXTURES:-$top/tests/.work}
# Tests name the Go they run (/usr/lib/go-1.19/bin/go, Debian's): a GOROOT
# left in the environment (for the Go on PATH) would give it another's library.
unset GOROOT
pat=${1:-}
log=$(mktemp)
times=$(mktemp)
trap 'rm -f "$log" "$times"' EXIT

./scripts/fixtures.sh || echo "FAIL: fixtures (scripts/fixtures.sh)" >>"$log"

run() { # label, command...
	label=$1
	shift
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed -E "s#^(PASS|FAIL|SKIP): #\1: [$label] #"
	printf '%s\n' "$out" | grep -E '^(PASS|FAIL|SKIP): ' | sed -E "s#^(PASS|FAIL|SKIP): #\1: [$label] #" >>"$log"
	if [ $rc -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL: '; then
		echo "FAIL: [$label] $* exited $rc" | tee -a "$log"
	fi
	# a file that judged nothing (not even a skip) cannot have passed
	if ! printf '%s\n' "$out" | grep -Eq '^(PASS|FAIL|SKIP): '; then
		echo "FAIL: [$label] $* ran no check" | tee -a "$log"
	fi
}

for b in build/tests/test-* build/san/tests/test-*; do
	[ -x "$b" ] || continue
	case $b in *"$pat"*) ;; *) continue ;; esac
	case $b in build/san/*) label=san ;; *) label=unit ;; esac
	run "$label" "$b"
done

# fuzz targets: a short bounded run each, replaying the saved corpus and crash reproducers
if [ -z "$pat" ] || [ "$pat" = fuzz ]; then
	run fuzz ./scripts/fuzz.sh "${PMUPROF_FUZZ_SECS:-2}"
fi

for pm in build/pmuprof build/san/pmuprof; do
	[ -x "$pm" ] || continue
	case $pm in build/san/*) label=e2e-san ;; *) label=e2e ;; esac
	for t in tests/e2e/t*.sh; do
		case $t in *"$pat"*) ;; *) continue ;; esac
		if [ "$label" = e2e-san ] && head -5 "$t" | grep -q '^# san: no'; then
			continue
		fi
		echo "== $label $t"
		t0=$(date +%s%N)
		PMUPROF="$top/$pm" run "$label" sh "$t"
		ms=$((($(date +%s%N) - t0) / 1000000))
		# one line per file, so that a slow test is visible
		printf 'time: [%s] %s %d.%d s\n' "$label" "$(basename "$t" .sh)" $((ms / 1000)) $((ms % 1000 / 100))
		printf '%s %s %d\n' "$label" "$(basename "$t" .sh)" "$ms" >>"$times"
	done
done

if [ -s "$times" ]; then
	echo
	echo "slowest e2e files:"
	sort -k3 -rn "$times" | head -5 | awk '{ printf "  [%s] %s %.1f s\n", $1, $2, $3 / 1000 }'
	awk '{ t += $3 } END { printf "e2e total: %.0f s\n", t / 1000 }' "$times"
fi
p=$(grep -c '^PASS: ' "$log")
f=$(grep -c '^FAIL: ' "$log")
s=$(grep -c '^SKIP: ' "$log")
if [ "$f" -gt 0 ]; then
	echo
	echo "failures:"
	grep '^FAIL: ' "$log"
fi
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
