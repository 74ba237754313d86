#!/bin/sh
# An independent decoder, npm's pprof-format (via tests/e2e/decode.js), reads
# pmuprof's profiles, finds every reference intact, and agrees with pmuprof
# report on the sample types, the totals and the top leaf functions.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd node node
need_file pprof-format "$NPM/pprof-format/package.json" "$GOFIX/shares"
export PPROF_FORMAT="$NPM/pprof-format"
dec() { node "$top/tests/e2e/decode.js" "$@"; }

# the decoder itself must reject a broken file (else agreeing means nothing)
printf 'not a profile\n' | gzip >"$T/junk.gz"
if dec "$T/junk.gz" >/dev/null 2>&1; then fail decoder-rejects-junk; else pass decoder-rejects-junk; fi

rec() { n=$1; shift; "$PMUPROF" record -q -o "$T/$n.pb.gz" "$@" || fail "record-$n" "exit $?"; }
rec shares -e cpu-clock -F 2000 -- "$GOFIX/shares" -scale 0.5
rec stripped -e cpu-clock -- "$GOFIX/shares-stripped" -scale 0.1
rec period -e cpu-clock -c 500000 -- "$GOFIX/shares" -scale 0.1
rec faults -e page-faults -c 1 -- "$GOFIX/shares" -scale 0.05
rec true -e cpu-clock -- /bin/true

for n in shares stripped period faults true; do
	if dec "$T/$n.pb.gz" 1000 >"$T/$n.dec" 2>"$T/$n.derr"; then pass "decodes-$n"; else fail "decodes-$n" "$(head -1 "$T/$n.derr")"; fi
	# totals of the default type
	"$PMUPROF" report -i "$T/$n.pb.gz" --folded --sample-index "$(sed -n 's/^default: //p' "$T/$n.dec")" >"$T/$n.f"
	dt=$(sed -n 's/^samples: [0-9]* total: \([0-9]*\)$/\1/p' "$T/$n.dec")
	if [ "$dt" = "$(folded_total "$T/$n.f")" ]; then pass "total-$n"; else fail "total-$n" "pprof-format $dt, pmuprof $(folded_total "$T/$n.f")"; fi
done

want_types() { # NAME WANT-TYPES WANT-DEFAULT
	t=$(sed -n 's/^types: //p' "$T/$1.dec") d=$(sed -n 's/^default: //p' "$T/$1.dec")
	if [ "$t" = "$2" ] && [ "$d" = "$3" ]; then pass "types-$1"; else fail "types-$1" "types '$t' default '$d'"; fi
}
want_types shares "samples/count cpu/nanoseconds" cpu
want_types period "samples/count cpu/nanoseconds" cpu
want_types faults "samples/count page-faults/count" page-faults
if grep -q '^period: cpu/nanoseconds 500000$' "$T/period.dec"; then pass period-value; else fail period-value "$(grep '^period' "$T/period.dec")"; fi
if grep -q '^comment: pmuprof record: event cpu-clock, 2000 Hz' "$T/shares.dec"; then pass comment-settings; else fail comment-settings "$(grep '^comment' "$T/shares.dec" | head -3 | tr '\n' '|')"; fi
if grep -q '^comment: lost [0-9]* samples' "$T/shares.dec" && grep -q '^comment: stacks cut: ' "$T/shares.dec"; then
	pass comment-lost-cut
else
	fail comment-lost-cut "$(grep '^comment' "$T/shares.dec" | tr '\n' '|')"
fi

# top 4 leaves and their shares == pmuprof report's top 4 self rows
for n in shares stripped; do
	awk '/^leaf / { print $3 }' "$T/$n.dec" | head -4 | tr '\n' ' ' >"$T/d4"
	"$PMUPROF" report -i "$T/$n.pb.gz" --top 0 >"$T/$n.tab"
	table_funcs "$T/$n.tab" 4 | tr '\n' ' ' >"$T/p4"
	[ $n = shares ] && echo "# pprof-format top 4: $(cat "$T/d4")/ pmuprof report: $(cat "$T/p4")"
	# same file, both readers: equal order; the top four are the four burn
	# functions (over 5 % each on any CPU; their order depends on the CPU)
	if [ -s "$T/d4" ] && cmp -s "$T/d4" "$T/p4" &&
		[ "$(tr ' ' '\n' <"$T/d4" | grep . | LC_ALL=C sort | tr '\n' ' ')" = "main.burn1 main.burn2 main.burn3 main.burn4 " ]; then
		pass "top4-agree-$n"
	else
		fail "top4-agree-$n" "pprof-format: $(cat "$T/d4") pmuprof: $(cat "$T/p4")"
	fi
	tot=$(sed -n 's/^samples: [0-9]* total: \([0-9]*\)$/\1/p' "$T/$n.dec")
	awk -v t="$tot" '/^leaf / && $2 > 0 && $3 !~ /^(\[|0x)/ { printf "%s %.2f\n", $3, 100 * $2 / t }' "$T/$n.dec" | LC_ALL=C sort >"$T/d.pct"
	table_rows "$T/$n.tab" | awk ' { f = $1; sub(/%/, "", f); if (f + 0 > 0 && $4 !~ /^(\[|0x)/) print $4, f }' | LC_ALL=C sort >"$T/p.pct"
	if [ -s "$T/d.pct" ] && [ "$(cut -d' ' -f1 "$T/d.pct")" = "$(cut -d' ' -f1 "$T/p.pct")" ] &&
		join "$T/d.pct" "$T/p.pct" | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 0.011) bad = 1 } END { exit bad }'; then
		pass "self-percent-agree-$n"
	else
		fail "self-percent-agree-$n" "$(diff "$T/d.pct" "$T/p.pct" | grep '^[<>]' | head -4 | tr '\n' ' ')"
	fi
done
