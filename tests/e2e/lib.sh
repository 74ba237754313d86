# shellcheck shell=sh disable=SC2034
# (sourced: what it sets is for the tests that source it)
# Sourced by tests/e2e/t*.sh.  Provides:
#   $PMUPROF       the pmuprof binary under test (absolute path)
#   $FIX           fixture directory (tests/.work), $GOFIX = $FIX/go, $NPM = $FIX/npm/node_modules
#   $T             a fresh scratch directory, removed at exit
#   $SAN           1 under the ASan+UBSan build, else empty
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
GO=/usr/lib/go-1.19/bin/go # named: `go` on PATH is Go 1.26 on the project's machines
unset GOROOT
# SAN=1 when $PMUPROF is the ASan+UBSan build (tests/run.sh's second pass):
# a test whose cases repeat one code path on several builds may run one of
# each path there (it says which in a '#' line); the normal pass runs all.
case $PMUPROF in */san/*) SAN=1 ;; *) SAN= ;; esac
T=$(mktemp -d /tmp/pmuprof-e2e.XXXXXX)
trap 'rm -rf "$T"' EXIT
NAME=$(basename "$0" .sh)
if [ ! -x "$PMUPROF" ]; then
	echo "FAIL: $NAME/binary ($PMUPROF is not built)"
	exit 1
fi

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

# replay_equiv NAME LIVE CAPTURE INDEX...: `report -i CAPTURE` gives the live
# profile LIVE (both written by one `record --raw`): per sample index, the
# same text report (but its first line, the file's name: its header,
# comments and table) and the same folded stacks with their values; and
# the same totals.  The replayed pprof is $T/NAME.re.pb.gz.
replay_equiv() {
	n=$1 live=$2 cap=$3
	shift 3
	if ! "$PMUPROF" report -i "$cap" --pprof "$T/$n.re.pb.gz" >/dev/null 2>"$T/$n.re.err" ||
		[ -s "$T/$n.re.err" ]; then
		fail "$n-replay" "$(head -2 "$T/$n.re.err" | tr '\n' '|')"
		return
	fi
	why='' tot=''
	for si in "$@"; do
		for x in live re; do
			f=$live
			[ $x = re ] && f=$T/$n.re.pb.gz
			{ "$PMUPROF" report -i "$f" --top 0 --sample-index "$si" | sed 1d
			  "$PMUPROF" report -i "$f" --sample-index "$si" --folded; } >"$T/$n.$x.$si" 2>&1
		done
		t=$(awk '/^[^#]/ { s += $NF } END { printf "%.0f", s }' "$T/$n.live.$si")
		tot="$tot $si $t"
		if ! cmp -s "$T/$n.live.$si" "$T/$n.re.$si" || [ "$t" = 0 ]; then
			why="$why $si: total $t, $(diff "$T/$n.live.$si" "$T/$n.re.$si" | grep -c '^[<>]') lines differ: $(diff "$T/$n.live.$si" "$T/$n.re.$si" | grep '^[<>]' | head -2 | tr '\n' '|')"
		fi
	done
	echo "# $n: live == replay:$tot; capture $(wc -c <"$cap") bytes"
	if [ -z "$why" ]; then pass "$n-replay"; else fail "$n-replay" "$why"; fi
}

# Self share, in percent with one decimal, of frames named exactly FUNC as the
# leaf of folded stacks in FILE.
share() {
	awk -v f="$2" '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line);
		k = split(line, fr, ";"); if (fr[k] == f) self += n }
		END { if (total == 0) print "0.0"; else printf "%.1f\n", 100 * self / total }' "$1"
}

# perf_event_open usable at all?
can_perf() { "$PMUPROF" record -e cpu-clock -o "$T/probe.pb.gz" -- /bin/true >/dev/null 2>&1; }

# ---- added helpers ----
#   need_perf                 skip the whole script (exit 0) when perf_event_open is refused
#   need_file NAME FILE...    skip the whole script when a fixture file is missing
#   need_cmd NAME CMD...      skip the whole script when a program is missing
#   folded_total FILE         sum of the counts of folded stacks in FILE
#   leaf_names FILE PCT       sorted leaf function names with a self share above PCT %
#   complete_pct FILE         % (by count) of folded stacks rooted in runtime.goexit
#                             (record --all-frames) or runtime.mstart (an M's own
#                             stack: sysmon's syscalls, now that the kernel's time
#                             counts), or holding a main.main frame
#   resolved_pct FILE         % of all frames (weighted by count) that are symbol
#                             names, not addresses (0x..., module+0x...) or [markers]
#   table_rows FILE           the function rows of a `pmuprof report` table (no headers)
#   table_funcs FILE N        the first N function names of a `pmuprof report` table
#   need_tracefs              skip the whole script when pmuprof cannot have tracefs
#                             (it mounts it for itself where it is not mounted)
#   tracefs_ok                true when pmuprof can have tracefs
#   probes_left               how many pmuprof_ uprobes the kernel still defines
#   now_ms                    wall clock in milliseconds
#   sample_count FILE         N from the "pmuprof: wrote FILE: N samples" line in FILE

need_perf() {
	if ! "$PMUPROF" record -e cpu-clock -o "$T/probe.pb.gz" -- /bin/true >"$T/probe.out" 2>&1; then
		skip all "perf_event_open refused or pmuprof record broken: $(head -1 "$T/probe.out")"
		exit 0
	fi
}

need_file() {
	n=$1
	shift
	for f in "$@"; do
		if [ ! -e "$f" ]; then
			skip "$n" "fixture missing: $f (run scripts/fixtures.sh)"
			exit 0
		fi
	done
}

need_cmd() {
	n=$1
	shift
	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1; then
			skip "$n" "$c not installed"
			exit 0
		fi
	done
}

# pmuprof mounts tracefs for itself where it is not mounted (root: in a mount
# namespace of its own, nothing left mounted); tests never mount it.
tracefs_ok() {
	[ -d /sys/kernel/tracing/events ] || [ -d /sys/kernel/debug/tracing/events ] ||
		{ [ "$(id -u)" = 0 ] && grep -qw tracefs /proc/filesystems && [ -d /sys/kernel/tracing ]; }
}

need_tracefs() {
	if ! tracefs_ok; then
		skip all "no tracefs for pmuprof (not root, or a kernel without it): the creation probe is defined there"
		exit 0
	fi
}

# the kernel's uprobe definitions (through a private mount where tracefs is not mounted)
uprobe_events() {
	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		if [ -r "$d/uprobe_events" ]; then
			cat "$d/uprobe_events"
			return
		fi
	done
	unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && cat /sys/kernel/tracing/uprobe_events'
}

# how many probes pmuprof defined are still defined
probes_left() { uprobe_events | grep -c 'pmuprof_'; }

folded_total() { awk '{ t += $NF } END { printf "%.0f\n", t }' "$1"; }

leaf_names() {
	awk -v p="$2" '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line);
		k = split(line, fr, ";"); self[fr[k]] += n }
		END { for (f in self) if (total > 0 && 100 * self[f] / total > p) print f }' "$1" | LC_ALL=C sort
}

complete_pct() {
	awk '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line);
		k = split(line, fr, ";"); ok = (fr[1] == "runtime.goexit" || fr[1] == "runtime.mstart");
		for (i = 1; i <= k && !ok; i++) if (fr[i] == "main.main") ok = 1;
		if (ok) good += n }
		END { if (total == 0) print "0.0"; else printf "%.2f\n", 100 * good / total }' "$1"
}

resolved_pct() {
	awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line);
		k = split(line, fr, ";");
		for (i = 1; i <= k; i++) {
			total += n
			f = fr[i]
			if (f ~ /^[A-Za-z_][^ ]*\.[^ ]/ && f !~ /0x[0-9a-fA-F]+/ && f !~ /^\[/) good += n
		} }
		END { if (total == 0) print "0.0"; else printf "%.2f\n", 100 * good / total }' "$1"
}

table_rows() { awk '!/^#/ && NF >= 4 && $1 ~ /^[0-9]+(\.[0-9]+)?%$/' "$1"; }
table_funcs() { table_rows "$1" | awk -v n="$2" 'c < n { print $4; c++ }'; }

# wait_line FILE REGEX SECS: until a line of FILE matches (1 after SECS)
wait_line() {
	_i=0
	while ! grep -Eq "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt $(($3 * 20)) ] && return 1
		sleep 0.05
	done
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

sample_count() { sed -n 's/^pmuprof: wrote .*: \([0-9][0-9]*\) samples.*/\1/p' "$1" | tail -1; }

# wait_bounded PID SECS: wait for background job PID (a direct child); when it
# is still running after SECS, SIGKILL its children and itself and return 124.
# One-letter state of a process (R, S, Z, ...) from /proc, "" when gone.
proc_state() {
	sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' /proc/"$1"/stat 2>/dev/null
}

wait_bounded() {
	_i=0
	while kill -0 "$1" 2>/dev/null && [ $_i -lt $(($2 * 10)) ]; do
		sleep 0.1
		_i=$((_i + 1))
		# a zombie counts as gone
		case $(proc_state "$1") in Z*) break ;; esac
	done
	if kill -0 "$1" 2>/dev/null && [ "$(proc_state "$1")" != Z ]; then
		# say what it was doing, for whoever reads the failure
		echo "# wait_bounded: pid $1 still there after $2 s: state $(proc_state "$1"), wchan $(cat /proc/"$1"/wchan 2>/dev/null), $(ls /proc/"$1"/task 2>/dev/null | wc -l) threads"
		for _c in $(pgrep -P "$1"); do kill -KILL "$_c" 2>/dev/null; done
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
}

# rec NAME ARGS...: pmuprof record (cpu-clock at $REC_HZ, default 1000) into
# $T/NAME.{pb.gz,folded}; the folded file is empty when recording fails.
# With --all-frames: the unwinder's tests know a complete stack by its root,
# runtime.goexit, which the default hides as runtime/pprof does.
rec() {
	_r=$1
	shift
	if "$PMUPROF" record --all-frames -q -e cpu-clock -F "${REC_HZ:-1000}" -o "$T/$_r.pb.gz" "$@" >/dev/null 2>"$T/$_r.err"; then
		"$PMUPROF" report -i "$T/$_r.pb.gz" --folded >"$T/$_r.folded"
	else
		: >"$T/$_r.folded"
		sed 's/^/    /' "$T/$_r.err" | head -3
	fi
}

# goid_roots PROFILE: "SAMPLES WRONG UNKNOWN NOLABEL" for the goroutine ids
# of a profile recorded with --all-frames (goroutines keep runtime.goexit
# at their root): SAMPLES labelled with a goroutine id whose stack reaches
# its start function (goexit's caller; the root itself for the main
# goroutine and the runtime's threads), WRONG of them starting at another
# function than most samples of their id (a goroutine never runs two start
# functions), UNKNOWN samples marked "[goroutine unknown]" (with
# creators), NOLABEL samples on runtime.goexit without a goroutine id.
goid_roots() {
	gotool tool pprof -traces -sample_index=0 "$1" 2>/dev/null | awk '
		function flush(  root) {
			if (nf && fr[nf] == "[goroutine unknown]") unk += v
			else if (gid == "" && nf && fr[nf] == "runtime.goexit") nol += v
			else if (gid != "" && nf) {
				root = fr[nf]
				if (root == "runtime.goexit" && nf > 1) root = fr[nf - 1]
				if (root !~ /^\[/) { c[gid SUBSEP root] += v; t[gid] += v; all += v }
			}
			nf = 0; gid = ""; v = 0
		}
		/^-+\+/ { flush(); next }
		/^ *goroutine: / { gid = $2; next }
		/^ *[a-z_]+: / { next }
		nf == 0 && /^ *[0-9]/ { v = $1 + 0; sub(/^ *[0-9.]+[a-z]* +/, "") }
		NF { sub(/^ +/, ""); sub(/ \(inline\)$/, ""); fr[++nf] = $0 }
		END {
			flush()
			for (k in c) { split(k, a, SUBSEP); if (c[k] > best[a[1]]) best[a[1]] = c[k] }
			for (id in t) wrong += t[id] - best[id]
			printf "%d %d %d %d\n", all, wrong, unk, nol
		}'
}
