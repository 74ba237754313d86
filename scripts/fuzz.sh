#!/bin/sh
# Build the libFuzzer targets (tests/fuzz/fuzz-*.c) with clang, ASan and
# UBSan, then run each.  Usage: scripts/fuzz.sh [SECONDS [TARGET...]]
# (default 60 s each; TARGET is a name such as fuzz-evt, default all)
#
# Every run first replays the saved corpus tests/fuzz/corpus/<target>/ and
# the crash reproducers tests/fuzz/crashes/<target>/ (a reproducer that still
# crashes fails the run); new interesting inputs found go to build/fuzz/corpus.
# Output: one "PASS: fuzz/<target>" or "FAIL: fuzz/<target>" line per target.
# tests/fuzz/<target>.flags, when present, holds more libFuzzer options for
# that target (one line, e.g. -close_fd_mask=2).
# FUZZ_TIMEOUT=SECONDS: libFuzzer's -timeout for one input (default 10; the
# long background runs use 60, tests/fuzz/HOURS.md).
# With FUZZ_LEDGER=FILE each run also appends one line to FILE: target,
# start (UTC), seconds, executions, coverage, ok|crash (tab-separated).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
secs=${1:-60}
[ $# -gt 0 ] && shift
only=" $* "
O=build/fuzz
CC=${FUZZ_CC:-clang}
if ! command -v "$CC" >/dev/null 2>&1; then
	echo "SKIP: fuzz (no clang)"
	exit 0
fi
mkdir -p "$O/obj" "$O/gen" "$O/corpus"
[ -f "$O/gen/profile.pb-c.c" ] || protoc-c --proto_path=proto --c_out=$O/gen proto/profile.proto
# OTLP's messages (lib/agent/otlp.c), as the Makefile compiles them
otlp_protos=$(find proto/opentelemetry -name '*.proto' | sort)
otlp_gen=$(printf '%s\n' $otlp_protos | sed "s|^proto/|$O/gen/|; s|\.proto\$|.pb-c.c|")
for f in $otlp_gen; do
	[ -f "$f" ] || { protoc-c --proto_path=proto --c_out=$O/gen $otlp_protos; break; }
done
# the flame-graph page's script and style, as the Makefile embeds them (lib/output/html.c)
if [ ! -f "$O/gen/flame-assets.h" ] || [ web/flame.js -nt "$O/gen/flame-assets.h" ] ||
	[ web/flame.css -nt "$O/gen/flame-assets.h" ]; then
	./scripts/embed.sh "$O/gen/flame-assets.h" pm_flame_js web/flame.js pm_flame_css web/flame.css ||
		{ echo "FAIL: fuzz/build (scripts/embed.sh)"; exit 1; }
fi
FL="-g -O1 -std=c11 -D_GNU_SOURCE -I. -Ilib -I$O/gen -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
objs=""
# an object is rebuilt when its source or any header is newer (a struct
# changed in a header left objects of the old layout, and fuzz-replay crashed)
newest_h=$(ls -t lib/*/*.h | head -1)
# (on every CPU: the suite's own time)
jobs=$(nproc 2>/dev/null || echo 2)
todo=
for src in lib/*/*.c $O/gen/profile.pb-c.c $otlp_gen; do
	# named by its path: two modules of one name in two folders (perf/attach.c, session/attach.c)
	obj=$O/obj/$(printf '%s' "${src%.c}" | tr / _).o
	if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_h" -nt "$obj" ]; then
		todo="$todo $src"
	fi
	objs="$objs $obj"
done
if [ -n "$todo" ]; then
	# shellcheck disable=SC2086
	printf '%s\n' $todo | xargs -P "$jobs" -I{} sh -c \
		'$0 $1 -w -c -o "$2/obj/$(printf "%s" "{}" | sed "s/\.c\$//" | tr / _).o" "{}" || { echo "FAIL: fuzz/build ({})"; exit 255; }' \
		"$CC" "$FL" "$O" || exit 1
fi
libs="$(pkg-config --libs libelf libdw libprotobuf-c zlib libcurl) -pthread"
rc=0
for src in tests/fuzz/fuzz-*.c; do
	[ -f "$src" ] || continue
	name=$(basename "$src" .c)
	bin=$O/$name
	[ "$only" = "  " ] || case $only in *" $name "*) ;; *) continue ;; esac
	# shellcheck disable=SC2086
	if ! $CC $FL -fsanitize=fuzzer -o "$bin" "$src" $objs $libs 2>"$O/$name.build.log"; then
		echo "FAIL: fuzz/$name (build: $(head -1 "$O/$name.build.log"))"
		rc=1
		continue
	fi
	seeds="tests/fuzz/corpus/$name"
	crashes="tests/fuzz/crashes/$name"
	mkdir -p "$O/corpus/$name"
	if [ -d "$crashes" ] && [ -n "$(ls -A "$crashes" 2>/dev/null)" ]; then
		if ! "$bin" -runs=0 "$crashes"/* >"$O/$name.crashes.log" 2>&1; then
			echo "FAIL: fuzz/$name (a saved crash reproducer crashes again; see $O/$name.crashes.log)"
			rc=1
			continue
		fi
	fi
	dirs="$O/corpus/$name"
	[ -d "$seeds" ] && dirs="$dirs $seeds"
	flags=
	[ -f "tests/fuzz/$name.flags" ] && flags=$(head -1 "tests/fuzz/$name.flags")
	t0=$(date +%s)
	# shellcheck disable=SC2086
	if "$bin" -max_total_time="$secs" -rss_limit_mb=1024 -timeout="${FUZZ_TIMEOUT:-10}" -print_final_stats=1 \
		-artifact_prefix="$O/$name-" $flags $dirs >"$O/$name.log" 2>&1; then
		res=ok
	else
		res=crash
		rc=1
	fi
	execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$O/$name.log" | tail -1 | awk '{print $2}')
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$O/$name.log" | tail -1)
	if [ $res = ok ]; then
		echo "PASS: fuzz/$name ($execs execs in ${secs}s, $cov)"
	else
		echo "FAIL: fuzz/$name (crash; see $O/$name.log and $O/$name-*)"
	fi
	# FUZZ_LEDGER=FILE: one line per run (tests/fuzz/HOURS.md keeps the totals)
	if [ -n "${FUZZ_LEDGER:-}" ]; then
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(date -u -d "@$t0" +%Y-%m-%dT%H:%MZ)" \
			$(($(date +%s) - t0)) "${execs:-?}" "${cov:-?}" $res >>"$FUZZ_LEDGER"
	fi
done
exit $rc
