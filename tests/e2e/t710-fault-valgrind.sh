#!/bin/sh
# san: no
# Valgrind (memcheck) over `report`, table and folded, on the committed
# inputs: pmuprof's own pprof, a Go runtime/pprof profile, a --raw capture
# replayed through the unwinder and symbolizer.  Any invalid access or a
# definite/indirect leak fails the check.  (Skipped under the ASan build:
# the two instrumentations do not mix.)
. "$(dirname "$0")/lib.sh"
if ! command -v valgrind >/dev/null 2>&1; then
	skip valgrind "valgrind is not installed"
	exit 0
fi
for f in tests/fuzz/corpus/fuzz-pprof/ours.pb.gz tests/fuzz/corpus/fuzz-pprof/go-cpu.pprof \
	tests/fixtures/shares.data; do
	for mode in table folded; do
		opt=
		[ $mode = folded ] && opt=--folded
		n=$(basename "$f")-$mode
		if valgrind -q --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite,indirect \
			"$PMUPROF" report $opt -i "$top/$f" >"$T/out" 2>"$T/err"; then
			pass "$n"
		else
			head -20 "$T/err" | sed 's/^/    /'
			fail "$n" "valgrind found errors"
		fi
	done
done
