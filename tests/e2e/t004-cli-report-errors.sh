#!/bin/sh
# report on bad input: missing, empty, truncated, corrupt, not gzip, gzip of
# non-pprof bytes (exit 1, one line), and report usage errors (exit 2).
# The real profile to damage is one Go's runtime/pprof wrote (no perf needed).
. "$(dirname "$0")/lib.sh"

need_file goprof "$GOFIX/goprof"
"$GOFIX/goprof" -o "$T/good.pb.gz" -scale 0.3 || { fail goprof-run; exit 1; }
check good-reads "$PMUPROF" report -i "$T/good.pb.gz"

rep() { "$PMUPROF" report "$@"; }
cd "$T" || exit 1

expect_fail missing 1 "^pmuprof: cannot open '$T/nope.pb.gz': No such file or directory$" rep -i "$T/nope.pb.gz"
expect_fail missing-default 1 "^pmuprof: cannot open 'pmuprof.pb.gz': No such file or directory$" rep
: >"$T/empty"
expect_fail empty 1 "^pmuprof: cannot read '$T/empty': file is empty$" rep -i "$T/empty"
mkdir "$T/dir"
expect_fail directory 1 "^pmuprof: cannot (open|read) '$T/dir': " rep -i "$T/dir"

size=$(wc -c <"$T/good.pb.gz")
head -c $((size / 2)) "$T/good.pb.gz" >"$T/half.pb.gz"
expect_fail truncated-half 1 "^pmuprof: cannot read '$T/half.pb.gz': truncated gzip stream$" rep -i "$T/half.pb.gz"
head -c 20 "$T/good.pb.gz" >"$T/head.pb.gz"
expect_fail truncated-header 1 "^pmuprof: cannot read '$T/head.pb.gz': " rep -i "$T/head.pb.gz"
head -c $((size - 4)) "$T/good.pb.gz" >"$T/notrailer.pb.gz"
expect_fail truncated-trailer 1 "^pmuprof: cannot read '$T/notrailer.pb.gz': truncated gzip stream$" \
	rep -i "$T/notrailer.pb.gz"

# corrupt the deflate data / CRC: flip a byte in the middle
python3 - "$T/good.pb.gz" "$T/flip.pb.gz" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[len(b) // 2] ^= 0x55
open(sys.argv[2], 'wb').write(b)
PY
expect_fail corrupt-gzip 1 "^pmuprof: cannot read '$T/flip.pb.gz': " rep -i "$T/flip.pb.gz"

cp /bin/true "$T/elf"
expect_fail not-gzip-elf 1 "^pmuprof: cannot read '$T/elf': not a pprof profile" rep -i "$T/elf"
printf 'not a profile, just text\n' >"$T/text"
expect_fail not-gzip-text 1 "^pmuprof: cannot read '$T/text': not a pprof profile" rep -i "$T/text"
printf 'not a profile, just text\n' | gzip >"$T/text.gz"
expect_fail gzip-of-text 1 "^pmuprof: cannot read '$T/text.gz': not a pprof profile" rep -i "$T/text.gz"
gzip <"$T/elf" >"$T/elf.gz"
expect_fail gzip-of-elf 1 "^pmuprof: cannot read '$T/elf.gz': not a pprof profile" rep -i "$T/elf.gz"

# uncompressed pprof: the whole one reads, a cut one does not
gzip -dc "$T/good.pb.gz" >"$T/raw.pb"
check raw-reads "$PMUPROF" report -i "$T/raw.pb"
rsize=$(wc -c <"$T/raw.pb")
head -c $((rsize / 2 + 1)) "$T/raw.pb" >"$T/rawhalf.pb"
expect_fail raw-truncated 1 "^pmuprof: cannot read '$T/rawhalf.pb': not a pprof profile" rep -i "$T/rawhalf.pb"
head -c $((rsize / 2 + 1)) "$T/raw.pb" | gzip >"$T/rawhalf.pb.gz"
expect_fail gzip-of-truncated-pprof 1 "^pmuprof: cannot read '$T/rawhalf.pb.gz': not a pprof profile" \
	rep -i "$T/rawhalf.pb.gz"

# usage errors (exit 2)
expect_fail extra-arg 2 "^pmuprof: .*'$T/good.pb.gz'" rep "$T/good.pb.gz"
expect_fail top-abc 2 "^pmuprof: invalid --top 'abc'" rep -i "$T/good.pb.gz" --top abc
expect_fail top-neg 2 "^pmuprof: invalid --top '-1'" rep -i "$T/good.pb.gz" --top -1
expect_fail sort-bad 2 "^pmuprof: invalid sort key 'flat'" rep -i "$T/good.pb.gz" --sort flat
expect_fail sample-index-name 2 "^pmuprof: no sample type 'cycles'" rep -i "$T/good.pb.gz" --sample-index cycles
expect_fail sample-index-num 2 "^pmuprof: no sample type '2'" rep -i "$T/good.pb.gz" --sample-index 2
expect_fail input-no-value 2 "^pmuprof: .*-i" rep -i
# an unreadable file is an error even with a usage-valid command line
expect_fail folded-missing 1 "^pmuprof: cannot open" rep --folded -i "$T/nope"

# no file is ever written by report
if ls -A "$T" | grep -qv -e '^good.pb.gz$' -e '^half.pb.gz$' -e '^head.pb.gz$' -e '^notrailer.pb.gz$' \
	-e '^flip.pb.gz$' -e '^elf' -e '^text' -e '^raw' -e '^empty$' -e '^dir$' -e '^ef\.' -e '^check.out$'; then
	fail no-files-written "$(ls -A "$T" | tr '\n' ' ')"
else
	pass no-files-written
fi
