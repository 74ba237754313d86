#!/bin/sh
# record --alloc's budget of probe hits per second (--alloc-max-rate) on
# tests/go/benchalloc: 12 000 MB in a fixed mix of sizes on two goroutines,
# at the runtime's default rate (a sampled allocation per 512 KiB: some
# thousands of hits a second here), over a budget of 300.  The fixture's
# truth is the bytes it allocated.  Checks:
#   - one line on stderr says the budget is exceeded, the profile's comment
#     how much of the time the probe watched (below 100 %);
#   - the scaled alloc_space 75-125 % of the bytes allocated (as t841 for
#     --locks; without the weights it would be the share watched, ~10 %).
#     It came out 83-85 % at this budget, 88 % at 1000, 93 % at 2000: the
#     windows are on time (the first and last samples of each within 1-2
#     ms of its planned edges), but the program allocates less while it is
#     watched, each of its ~4000 sampled allocations a second trapping;
#   - the probe's samples per second at most twice the budget, plus the
#     first 100 ms at the full rate (before the budget knows it);
#   - the replay of a --raw capture weighs the samples the same.
# ~12 s.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
need_perf
need_file benchalloc "$FIX/go126/benchalloc"
need_tracefs
mb=12000
"$PMUPROF" record --alloc --alloc-max-rate 300 --raw "$T/b.data" -o "$T/b.pb.gz" -- \
	"$FIX/go126/benchalloc" -mb $mb >"$T/b.out" 2>"$T/b.err"
check record-exit test $? = 0
sed 's/^/# /' "$T/b.out" "$T/b.err"
rate=$(sed -n 's/.*alloc: \([0-9]*\) probe hits\/s, over the budget of 300 .*/\1/p' "$T/b.err")
check said-once test "$(grep -c 'over the budget of 300' "$T/b.err")" = 1 -a -n "$rate"
"$PMUPROF" report -i "$T/b.pb.gz" >"$T/r" 2>&1
watched=$(sed -n 's/.*the probe watched \([0-9.]*\) % of the time.*/\1/p' "$T/r")
echo "# watched: ${watched:-?} %"
check comment-watched awk -v w="${watched:-100}" 'BEGIN { exit !(w > 0 && w < 100) }'
"$PMUPROF" report -i "$T/b.pb.gz" --folded 2>/dev/null | sort >"$T/live"
est=$(awk '{ s += $NF } END { printf "%.0f", s }' "$T/live")
pct=$(awk -v e="$est" -v m=$mb 'BEGIN { printf "%.1f", 100 * e / (m * 1048576) }')
echo "# alloc_space estimated: $est bytes, $pct % of the $mb MB allocated"
check estimate-within awk -v p="$pct" 'BEGIN { exit !(p >= 75 && p <= 125) }'
n=$(sed -n 's/^pmuprof: wrote .*: \([0-9]*\) samples (.*/\1/p' "$T/b.err")
secs=$(sed -n 's/^pmuprof: wrote .* samples (.*), \([0-9.]*\) s$/\1/p' "$T/b.err")
bound=$(awk -v s="${secs:-0}" -v r="${rate:-0}" 'BEGIN { printf "%.0f", 2 * 300 * s + 0.15 * r + 50 }')
echo "# samples: ${n:-?} in ${secs:-?} s (bound $bound; unbounded rate $rate/s)"
check hits-bounded test "${n:-0}" -gt 0 -a "${n:-0}" -le "$bound"
"$PMUPROF" report -i "$T/b.data" --folded 2>/dev/null | sort >"$T/replay"
if [ -s "$T/live" ] && cmp -s "$T/live" "$T/replay"; then
	pass replay-same
else
	fail replay-same "$(diff "$T/live" "$T/replay" | head -4 | tr '\n' '|')"
fi
