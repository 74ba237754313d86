# Sourced by tests/e2e/t*.sh.  Provides:
#   $PMUPROF       the pmuprof binary under test (absolute path)
#   $FIX           fixture directory (tests/.work), $GOFIX = $FIX/go, $NPM = $FIX/npm/node_modules
#   $T             a fresh scratch directory, removed at exit
#   pass NAME / fail NAME [WHY] / skip NAME WHY    print one result line
#   check NAME CMD...         pass if CMD succeeds, else fail (CMD output shown on failure)
#   expect_fail NAME RC REGEX CMD...   CMD must exit with RC (or any non-zero if RC is '!0')
#                              and print one stderr line matching REGEX; nothing on stdout
#   gotool ARGS...            Debian's go 1.19 tool
#   share FILE FUNC           self share (%) of FUNC in `pmuprof report --folded` output FILE
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
PMUPROF=${PMUPROF:-$top/build/pmuprof}
FIX=${PMUPROF_FIXTURES:-$top/tests/.work}
GOFIX=$FIX/go
NPM=$FIX/npm/node_modules
GO=/usr/lib/go-1.19/bin/go
T=$(mktemp -d /tmp/pmuprof-e2e.XXXXXX)
trap 'rm -rf "$T"' EXIT
NAME=$(basename "$0" .sh)

pass() { echo "PASS: $NAME/$1"; }
fail() { echo "FAIL: $NAME/$1${2:+ ($2)}"; }
skip() { echo "SKIP: $NAME/$1 ($2)"; }

check() {
	n=$1
	shift
	if "$@" >"$T/check.out" 2>&1; then
		pass "$n"
	else
		sed 's/^/    /' "$T/check.out" | tail -20
		fail "$n"
	fi
}

expect_fail() {
	n=$1 want=$2 re=$3
	shift 3
	"$@" >"$T/ef.out" 2>"$T/ef.err"
	rc=$?
	lines=$(wc -l <"$T/ef.err")
	if [ "$want" = '!0' ] && [ $rc -eq 0 ]; then
		fail "$n" "exit 0"
	elif [ "$want" != '!0' ] && [ $rc -ne "$want" ]; then
		fail "$n" "exit $rc, expected $want: $(head -2 "$T/ef.err")"
	elif ! grep -Eq "$re" "$T/ef.err"; then
		fail "$n" "stderr does not match /$re/: $(head -2 "$T/ef.err")"
	elif [ "$lines" -ne 1 ]; then
		fail "$n" "stderr has $lines lines, expected 1: $(head -3 "$T/ef.err" | tr '\n' '|')"
	elif [ -s "$T/ef.out" ]; then
		fail "$n" "stdout not empty"
	else
		pass "$n"
	fi
}

gotool() { GOCACHE=$FIX/gocache "$GO" "$@"; }

# Self share, in percent with one decimal, of frames named exactly FUNC as the
# leaf of folded stacks in FILE.
share() {
	awk -v f="$2" '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line);
		k = split(line, fr, ";"); if (fr[k] == f) self += n }
		END { if (total == 0) print "0.0"; else printf "%.1f\n", 100 * self / total }' "$1"
}

# perf_event_open usable at all?
can_perf() { "$PMUPROF" record -e cpu-clock -o "$T/probe.pb.gz" -- /bin/true >/dev/null 2>&1; }
