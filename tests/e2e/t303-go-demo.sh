#!/bin/sh
# The demo program (JSON decode, sha256, sort on worker goroutines): its named
# functions carry the time, and library code under them is attributed to them.
# Then the shares fixture with the smallest and largest --stack-size.
. "$(dirname "$0")/lib.sh"
need_perf
need_file demo "$GOFIX/demo" "$GOFIX/shares"

cum() { # FILE FUNC: % of the total in stacks holding FUNC
	awk -v f="$2" '{ n = $NF; t += n; l = $0; sub(/ [0-9]+$/, "", l); k = split(l, fr, ";");
		for (i = 1; i <= k; i++) if (fr[i] == f) { c += n; break } }
		END { printf "%.1f\n", t ? 100 * c / t : 0 }' "$1"
}

p=$T/demo.pb.gz
"$PMUPROF" record -e cpu-clock -o "$p" -- "$GOFIX/demo" -duration 1s 2>"$T/e"
rc=$?
if [ $rc -eq 0 ]; then pass record; else fail record "exit $rc: $(head -2 "$T/e" | tr '\n' '|')"; fi
"$PMUPROF" report -i "$p" --folded >"$T/f"
for fn in main.parseRequests main.hashPayloads main.sortResults; do
	c=$(cum "$T/f" $fn)
	if awk -v c="$c" 'BEGIN { exit !(c >= 3) }'; then pass "cum-$fn"; else fail "cum-$fn" "$c %"; fi
done
c=$(awk '{ n = $NF; t += n; if ($0 ~ /main\.hashPayloads;.*crypto\/sha256\.block/) s += n } END { printf "%.1f\n", t ? 100 * s / t : 0 }' "$T/f")
if awk -v c="$c" 'BEGIN { exit !(c >= 3) }'; then pass sha256-under-hashPayloads; else fail sha256-under-hashPayloads "$c %"; fi
c=$(awk '{ n = $NF; t += n; if ($0 ~ /main\.parseRequests;.*encoding\/json\./) s += n } END { printf "%.1f\n", t ? 100 * s / t : 0 }' "$T/f")
if awk -v c="$c" 'BEGIN { exit !(c >= 3) }'; then pass json-under-parseRequests; else fail json-under-parseRequests "$c %"; fi
c=$(awk '{ n = $NF; t += n; if ($0 ~ /^runtime\.goexit;(main\.main\.func[0-9]+;)+main\.worker;/) s += n } END { printf "%.1f\n", t ? 100 * s / t : 0 }' "$T/f")
if awk -v c="$c" 'BEGIN { exit !(c >= 50) }'; then pass worker-stacks; else fail worker-stacks "$c % of samples under goexit;main.main.funcN...;main.worker"; fi

# --stack-size extremes on the known-answer fixture (0: kernel callchain only)
for ss in 0 65528; do
	q=$T/ss$ss.pb.gz
	if ! "$PMUPROF" record -q -e cpu-clock -F 2000 --stack-size $ss -o "$q" -- "$GOFIX/shares" -scale 0.25 2>"$T/e"; then
		fail "stack-size-$ss" "record failed: $(head -1 "$T/e")"
		continue
	fi
	"$PMUPROF" report -i "$q" --folded >"$T/ss"
	ok=1 got=
	for i in 1 2 3 4; do
		s=$(share "$T/ss" main.burn$i)
		got="$got $s"
		awk -v s="$s" -v w=$((i * 10)) 'BEGIN { d = s - w; exit !(d <= 4 && d >= -4) }' || ok=0
	done
	if [ $ok -eq 1 ]; then pass "stack-size-$ss-shares"; else fail "stack-size-$ss-shares" "shares$got"; fi
	c=$(complete_pct "$T/ss")
	if awk -v c="$c" 'BEGIN { exit !(c >= 95) }'; then pass "stack-size-$ss-complete"; else fail "stack-size-$ss-complete" "$c %"; fi
done
