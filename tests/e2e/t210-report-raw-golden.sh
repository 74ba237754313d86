#!/bin/sh
# Golden capture: `pmuprof report --all-frames --folded` on the committed capture
# tests/fixtures/shares.data equals tests/fixtures/shares.folded (diff -u).
# The capture names /tmp/pmuprof-golden/go/shares (built there by
# scripts/fixtures.sh, at a fixed path so the build is the same everywhere) by
# path and Go build ID: when the binary there is missing or another build
# (another Go), the comparison is skipped with the reason.  Also: a truncated copy
# still reports, with one warning; a corrupt one is one line and exit 1.
# Re-bless: scripts/regen-golden.sh.
. "$(dirname "$0")/lib.sh"
fixd=$top/tests/fixtures
cap=$fixd/shares.data
need_file golden "$cap" "$fixd/shares.folded" "$fixd/shares.buildid"

want_id=$(cat "$fixd/shares.buildid")
bin=$(grep -a -o '/[^[:cntrl:]]*/go/shares' "$cap" | head -1)
if [ ! -x "$bin" ]; then
	skip golden "the capture's binary $bin is not here (the fixture is tied to that path)"
else
	got_id=$(gotool tool buildid "$bin" 2>/dev/null)
	if [ "$got_id" != "$want_id" ]; then
		skip golden "$bin has build ID $got_id, the capture needs $want_id (another Go or source)"
	else
		"$PMUPROF" report --all-frames -i "$cap" --folded >"$T/got.folded" 2>"$T/got.err"
		if diff -u "$fixd/shares.folded" "$T/got.folded" >"$T/diff"; then
			pass golden
		else
			head -20 "$T/diff" | sed 's/^/    /'
			fail golden "report --folded differs from tests/fixtures/shares.folded"
		fi
		if [ -s "$T/got.err" ]; then fail golden-quiet "$(head -2 "$T/got.err")"; else pass golden-quiet; fi
		"$PMUPROF" report -i "$cap" --top 5 >"$T/table" 2>&1
		if [ "$(table_funcs "$T/table" 4 | tr '\n' ' ')" = "main.burn4 main.burn3 main.burn2 main.burn1 " ]; then
			pass golden-table
		else
			fail golden-table "$(table_funcs "$T/table" 4 | tr '\n' ' ')"
		fi
	fi
fi

# truncated: the first half of the file still gives stacks, and says so once
size=$(wc -c <"$cap")
head -c $((size / 2)) "$cap" >"$T/half.data"
"$PMUPROF" report -i "$T/half.data" --folded >"$T/half.folded" 2>"$T/half.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$T/half.err")" -eq 1 ] && grep -q 'is truncated' "$T/half.err" &&
	[ "$(folded_total "$T/half.folded")" -gt 0 ]; then
	pass truncated
else
	fail truncated "exit $rc, $(folded_total "$T/half.folded") samples: $(head -2 "$T/half.err" | tr '\n' '|')"
fi

# corrupt: one line, exit 1, nothing on stdout
head -c 64 "$cap" >"$T/bad.data"
printf 'PMUPROF\000\377\377\377\377' >"$T/badver.data"
head -c 300 /dev/zero >>"$T/badver.data"
expect_fail corrupt-header 1 "cannot read '.*bad.data': truncated capture|corrupt capture" \
	"$PMUPROF" report -i "$T/bad.data"
expect_fail corrupt-version 1 "cannot read '.*': unsupported capture version" \
	"$PMUPROF" report -i "$T/badver.data"
# a record with an impossible size inside a finished stream
cp "$cap" "$T/badrec.data"
off=$(od -An -t u8 -j 48 -N 8 "$cap" | tr -d ' ')
printf '\014\000' | dd of="$T/badrec.data" bs=1 seek=$((off + 6)) conv=notrunc 2>/dev/null
expect_fail corrupt-record 1 "cannot read '.*': corrupt capture: record at offset" \
	"$PMUPROF" report -i "$T/badrec.data"
expect_fail pprof-needs-capture 2 "[-]-pprof needs a capture" \
	"$PMUPROF" report -i "$T/half.folded" --pprof "$T/x.pb.gz"
