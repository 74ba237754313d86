#!/bin/sh
# --creators-max-rate (issue 31: a budget for every probe kind): on
# tests/go/shortlived, a goroutine per request that lives about a
# millisecond, ~1 000 made a second by two listeners 70/30, the creation
# probe held to 300 hits a second.  A goroutine made while the probe is
# closed has no creation record, and its g may still be named by the log
# for the goroutine it hosted before: such a sample must say "goroutine
# unknown", never the g's previous goroutine.  Checked against the
# fixture's truth: no sample of main.burnA under listener B or the other
# way round, every goroutine id sampled in main.burnA / burnB one that
# its goroutine printed (without the check, one run had 3 135 samples
# under the wrong listener and 83 ids no goroutine of that function had),
# the A share within 3.5 standard deviations of the truth; the probe's hits near the budget;
# the cost said (the warning once, the comments); a replay the same as
# live; attached too; and under the budget, nothing held back.
. "$(dirname "$0")/lib.sh"
need_perf
F126=$FIX/go126/shortlived
need_file shortlived "$F126"
need_cmd go "$GO"
need_tracefs

# stats FOLDED: handler samples, those under a listener, % A of those, under the wrong one
stats() {
	awk '/main\.burn[AB](;|[ ])/ {
			c = $NF; n += c
			a = index($0, "main.listenerA [creator]"); b = index($0, "main.listenerB [creator]")
			if (a || b) { l += c; if (a) la += c }
			if ((index($0, "main.burnA") && b) || (index($0, "main.burnB") && a)) wrong += c
		}
		END { printf "%d %d %.1f %d\n", n, l, l ? 100 * la / l : 0, wrong }' "$1"
}
truthA() { awk '/^truth / { split($2, a, "="); split($3, b, "="); printf "%.1f\n", 100 * a[2] / (a[2] + b[2]) }' "$1"; }
# the creations the probe saw, from the profile's comment
seen() { "$PMUPROF" report -i "$1" 2>/dev/null | sed -n 's/^# creators: \([0-9]*\) goroutine creations seen.*/\1/p'; }

# ids NAME: the goroutine ids sampled in main.burnA (burnB) are among those A's (B's) printed
ids() {
	bad=0 all=0
	for w in A B; do
		gotool tool pprof -focus="^main\.burn$w\$" -tags "$T/$1.pb.gz" 2>/dev/null |
			awk '/^ goroutine:/ { g = 1; next } g && NF == 0 { exit } g { print $NF }' | sort -u >"$T/$1.s$w"
		awk -v w=$w '$1 == w { print $2 }' "$T/$1.goids" | sort -u >"$T/$1.p$w"
		bad=$((bad + $(comm -23 "$T/$1.s$w" "$T/$1.p$w" | wc -l)))
		all=$((all + $(wc -l <"$T/$1.s$w")))
	done
	echo "# $1: $all goroutine ids sampled in burnA/burnB, $bad not printed by a goroutine of that function"
	# as t803: at most one in 500 (a sample read across a goroutine's exit)
	if [ "$all" -ge 20 ] && [ $((bad * 500)) -le "$all" ]; then pass "$1-ids"; else fail "$1-ids" "$bad of $all"; fi
}

# judge NAME SECS: the checks of a run over the budget
judge() {
	n=$1 secs=$2
	set -- $(stats "$T/$n.folded")
	truth=$(truthA "$T/$n.out")
	s=$(seen "$T/$n.pb.gz")
	made=$(awk '/^created/ { print $2 }' "$T/$n.out")
	echo "# $n: $1 handler samples, $2 under a listener, A $3 % (truth $truth %), $4 under the wrong listener; the probe saw ${s:-?} of $made creations in $secs s"
	if [ "$4" -eq 0 ] && [ "$2" -ge 300 ]; then pass "$n-no-wrong-creator"; else fail "$n-no-wrong-creator" "$4 of $2 under the wrong listener"; fi
	# within 3.5 standard deviations of a share of the goroutines seen (a
	# goroutine's samples come together: ~1 000 of them, not ~3 000 samples)
	if [ -n "$truth" ] && [ -n "$s" ] && [ "$2" -ge 300 ] && awk -v a="$3" -v b="$truth" -v n="$s" 'BEGIN {
		p = b / 100; t = 100 * 3.5 * sqrt(p * (1 - p) / n); if (t < 2) t = 2; d = a - b; exit !(d <= t && d >= -t) }'; then pass "$n-split"; else fail "$n-split" "A $3 % vs $truth %"; fi
	# the budget held (hits per second within 60-150 % of it: periods at random offsets)
	if [ -n "$s" ] && [ "$made" -ge $((secs * 600)) ] && [ "$s" -le $((secs * 450)) ] && [ "$s" -ge $((secs * 180)) ]; then
		pass "$n-budget"
	else
		fail "$n-budget" "${s:-?} creations seen of $made in $secs s"
	fi
	if [ "$(grep -c 'over the budget of 300 (--creators-max-rate)' "$T/$n.err")" -eq 1 ]; then pass "$n-said-once"; else fail "$n-said-once" "$(head -3 "$T/$n.err" | tr '\n' '|')"; fi
	if "$PMUPROF" report -i "$T/$n.pb.gz" 2>/dev/null | grep -Eq '^# creators: [1-9][0-9]* samples on a g whose goroutine may have been made while the probe did not watch'; then
		pass "$n-counted"
	else
		fail "$n-counted" "$("$PMUPROF" report -i "$T/$n.pb.gz" 2>&1 | grep '^# creators' | tr '\n' '|')"
	fi
}

run() { # NAME launch|attach RATE ARGS...
	n=$1 how=$2 rate=$3
	shift 3
	if [ "$how" = launch ]; then
		"$PMUPROF" record --all-frames -q -e cpu-clock -F 4000 --creators-max-rate "$rate" --raw "$T/$n.raw" \
			-o "$T/$n.pb.gz" -- "$F126" "$@" -goids "$T/$n.goids" >"$T/$n.out" 2>"$T/$n.err"
	else
		"$F126" "$@" -goids "$T/$n.goids" >"$T/$n.out" 2>&1 &
		p=$!
		sleep 0.3
		"$PMUPROF" record --all-frames -q -e cpu-clock -F 4000 --creators-max-rate "$rate" -p $p --duration 3 \
			-o "$T/$n.pb.gz" 2>"$T/$n.err"
		wait $p
	fi
	"$PMUPROF" report -i "$T/$n.pb.gz" --folded >"$T/$n.folded"
}

run launch launch 300 -shape helper -garbage 32768 -duration 3s
judge launch 3
ids launch
# a replay weighs the same: what the live run judged about the gaps is in the capture
"$PMUPROF" report -i "$T/launch.raw" --folded >"$T/launch.re.folded" 2>"$T/launch.re.err"
if [ -s "$T/launch.folded" ] && cmp -s "$T/launch.folded" "$T/launch.re.folded"; then pass launch-replay; else fail launch-replay "$(diff "$T/launch.folded" "$T/launch.re.folded" | head -3 | tr '\n' '|')"; fi
if [ -n "$SAN" ]; then
	echo "# ASan pass: launched over the budget only (attached and under it in the normal pass)"
	exit 0
fi

run attach attach 300 -shape helper -garbage 32768 -duration 3.6s
judge attach 3
ids attach

# under the budget (~1 000 a second, 100 000 allowed): every creation seen, no gap
run under launch 100000 -shape helper -duration 2s
s=$(seen "$T/under.pb.gz")
made=$(awk '/^created/ { print $2 }' "$T/under.out")
echo "# under: the probe saw ${s:-?} of $made creations"
if [ -n "$s" ] && [ "$s" -ge "$made" ] && ! grep -q 'budget' "$T/under.err" &&
	! "$PMUPROF" report -i "$T/under.pb.gz" 2>/dev/null | grep -q 'did not watch'; then
	pass under-budget-all-seen
else
	fail under-budget-all-seen "${s:-?} of $made; $(head -2 "$T/under.err" | tr '\n' '|')"
fi
set -- $(stats "$T/under.folded")
if [ "$4" -eq 0 ] && [ "$1" -ge 300 ] && [ $(($2 * 100)) -ge $(($1 * 97)) ]; then pass under-chains; else fail under-chains "$2 of $1 under a listener, $4 wrong"; fi
exit 0
