#!/bin/sh
# Goroutine wall clock (record --wall, issue 18) on tests/go/wallwait: N
# goroutines blocked in a channel receive in main.chanWaiter, M looping in
# time.Sleep in main.sleeper, K blocked on a held sync.Mutex in
# main.mutexWaiter, one spinning in main.busy.  The fixture's truth: each
# goroutine's id, and the wait reason its own runtime gives each function
# (its goroutine profile, debug=2).  Every snapshot gives each goroutine the
# same weight, so a function's wall time over the main goroutine's (always
# under runtime.main) is the number of goroutines in it: N, M, K, 1, within
# the snapshots in which a goroutine may not be in place yet (those before
# the fixture said ready, plus one) and those dropped, out of all of them.
# On Go 1.19, 1.26, 1.27; launched, attached, and stripped (= plain).
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd go "$GO"
N=40 M=20 K=10 HZ=20

# wall-share NAME: the checks on $T/NAME.{pb.gz,out}
judge() {
	n=$1
	"$PMUPROF" report -i "$T/$n.pb.gz" --sample-index wall --folded >"$T/$n.folded" 2>/dev/null
	"$PMUPROF" report -i "$T/$n.pb.gz" --sample-index wall >"$T/$n.report" 2>&1
	snaps=$(sed -n 's/.*--wall [0-9]* Hz: \([0-9]*\) snapshots.*/\1/p' "$T/$n.report")
	drop=$(sed -n 's/.*dropped: \([0-9]*\) changed while read, \([0-9]*\) moving.*/\1 \2/p' "$T/$n.report" | awk '{ print $1 + $2 }')
	ready=$(awk '/^ready/ { print $2 }' "$T/$n.out")
	if [ -z "$snaps" ] || [ -z "$ready" ] || [ "$snaps" -lt 10 ]; then
		fail "$n" "no wall profile: ${snaps:-no} snapshots, ready ${ready:-never}: $(head -2 "$T/$n.err" | tr '\n' '|')"
		return
	fi
	# snapshots before the fixture was ready (HZ a second at most), one more, and those dropped
	slack=$(awk -v r="$ready" -v hz=$HZ -v d="$drop" 'BEGIN { k = r * hz / 1000; printf "%d\n", (k == int(k) ? k : int(k) + 1) + 1 + d }')
	bad=$(awk -v N=$N -v M=$M -v K=$K -v S="$snaps" -v sl="$slack" '
		{ v = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";")
		  for (i = 1; i <= k; i++) if (fr[i] == "runtime.main") { U += v; break }
		  for (i = 1; i <= k; i++) if (fr[i] ~ /^main\.(chanWaiter|sleeper|mutexWaiter|busy)$/) { W[fr[i]] += v; break } }
		END { want["main.chanWaiter"] = N; want["main.sleeper"] = M; want["main.mutexWaiter"] = K; want["main.busy"] = 1
		      for (f in want) { a = U ? W[f] / U : 0; tol = want[f] * sl / S
		                        printf "%s %.2f (%d +- %.2f) ", f, a, want[f], tol
		                        if (a < want[f] - tol || a > want[f] + tol) bad = 1 }
		      print (bad ? "BAD" : "ok") }' "$T/$n.folded")
	echo "# $n: $snaps snapshots, ready at $(awk '/^ready/ { print $2 }' "$T/$n.out") ms, slack $slack: $bad"
	case $bad in *ok) pass "$n-shares" ;; *) fail "$n-shares" "$bad" ;; esac
	# wait reasons as the runtime names them, goroutine ids as the fixture printed
	ok=1 why=
	for f in chanWaiter sleeper mutexWaiter; do
		want=$(awk -v f=$f '$1 == "reason" && $2 == f { $1 = $2 = ""; sub(/^  /, ""); print }' "$T/$n.out")
		gotool tool pprof -sample_index=wall -focus="^main\.$f\$" -tags "$T/$n.pb.gz" >"$T/$n.$f.tags" 2>/dev/null
		got=$(awk '/^ wait_reason:/ { w = 1; next } w && NF == 0 { exit } w { sub(/^ *[^:]*: /, ""); print; exit }' "$T/$n.$f.tags")
		share=$(awk '/^ wait_reason:/ { w = 1; next } w && NF == 0 { exit } w { match($0, /\( *[0-9.]+%\)/); print substr($0, RSTART + 1, RLENGTH - 3) + 0; exit }' "$T/$n.$f.tags")
		min=$(awk -v S="$snaps" -v sl="$slack" 'BEGIN { printf "%.1f\n", 100 * (1 - sl / S) }')
		if [ "$got" != "$want" ] || ! awk -v a="${share:-0}" -v m="$min" 'BEGIN { exit !(a >= m) }'; then
			ok=0 why="$why $f: '$got' ${share:-0} % (want '$want' >= $min %)"
		fi
		# (the goroutines with wall time: CPU samples are listed with 0)
		awk '/^ goroutine:/ { g = 1; next } g && NF == 0 { exit } g && $1 != "0" { print $NF }' "$T/$n.$f.tags" | sort -u >"$T/$n.$f.got"
		awk -v f=$f '$1 == "goid" && $2 == f { print $3 }' "$T/$n.out" | sort -u >"$T/$n.$f.want"
		if ! cmp -s "$T/$n.$f.got" "$T/$n.$f.want"; then
			x=$(comm -23 "$T/$n.$f.got" "$T/$n.$f.want" | head -1)
			ok=0 why="$why $f ids: $(wc -l <"$T/$n.$f.got") sampled, $(wc -l <"$T/$n.$f.want") printed, $(comm -3 "$T/$n.$f.got" "$T/$n.$f.want" | head -3 | tr '\n\t' '  ')${x:+ (goroutine $x: $(gotool tool pprof -sample_index=wall -tagfocus=goroutine=$x -traces "$T/$n.pb.gz" 2>/dev/null | grep -v '^ *$' | tail -n +9 | head -12 | tr -s ' \n' ' '))}"
		fi
	done
	if [ $ok = 1 ]; then pass "$n-reasons-ids"; else fail "$n-reasons-ids" "$why"; fi
	# report: the wall by state and wait reason, the channel's the heaviest
	want=$(awk '$1 == "reason" && $2 == "chanWaiter" { $1 = $2 = ""; sub(/^  /, ""); print }' "$T/$n.out")
	first=$(sed -n '/^# by state and wait reason:/{n;p;}' "$T/$n.report")
	case $first in *" waiting "*"$want"*) pass "$n-report-states" ;; *) fail "$n-report-states" "first row '$first', want waiting $want" ;; esac
}

launch() { # NAME FIXTURE
	"$PMUPROF" record --all-frames -q -e cpu-clock --wall -o "$T/$1.pb.gz" -- "$2" $N $M $K 2 >"$T/$1.out" 2>"$T/$1.err"
	judge "$1"
}
attach() { # NAME FIXTURE
	: >"$T/$1.out"
	"$2" $N $M $K 3 >"$T/$1.out" 2>&1 &
	p=$!
	wait_ready=0
	while ! grep -q '^ready' "$T/$1.out" && [ $wait_ready -lt 50 ]; do sleep 0.1; wait_ready=$((wait_ready + 1)); done
	"$PMUPROF" record --all-frames -q -e cpu-clock --wall=$HZ -p $p --duration 2 -o "$T/$1.pb.gz" 2>"$T/$1.err"
	wait $p
	# attached after ready: every goroutine in place from the first snapshot
	sed -i 's/^ready .*/ready 0/' "$T/$1.out"
	judge "$1"
}

for v in go go126 go127; do
	if [ ! -x "$FIX/$v/wallwait" ]; then
		skip "$v" "no $FIX/$v/wallwait (scripts/fixtures.sh)"
		continue
	fi
	launch "$v-launch" "$FIX/$v/wallwait"
done
if [ -x "$FIX/go126/wallwait" ]; then
	attach go126-attach "$FIX/go126/wallwait"
	launch go126-stripped "$FIX/go126/wallwait-stripped"
	attach go119-stripped-attach "$GOFIX/wallwait-stripped"
fi

# --creators: every goroutine's wall time under its creator's stack (main.main made them all)
if [ -x "$FIX/go126/wallwait" ]; then
	"$PMUPROF" record --all-frames -q -e cpu-clock --wall --creators -o "$T/cr.pb.gz" -- "$FIX/go126/wallwait" $N $M $K 1 >"$T/cr.out" 2>"$T/cr.err"
	"$PMUPROF" report -i "$T/cr.pb.gz" --sample-index wall --folded >"$T/cr.folded" 2>/dev/null
	set -- $(awk '/main\.(chanWaiter|sleeper|mutexWaiter);/ { t += $NF; if (index($0, "main.main [creator];runtime.goexit;")) c += $NF }
		END { printf "%d %.1f\n", t, t ? 100 * c / t : 0 }' "$T/cr.folded")
	echo "# creators: $2 % of the waiters' wall time under main.main [creator]"
	if [ "$1" -gt 0 ] && [ "$2" = 100.0 ]; then pass creators; else fail creators "$2 % of $1 ns: $(grep chanWaiter "$T/cr.folded" | grep -v 'main.main \[creator\]' | head -1 | cut -c1-200)"; fi
fi

# usage: a bad rate, and --raw (a capture does not hold the snapshots)
expect_fail bad-rate 2 "invalid --wall '0'" "$PMUPROF" record --all-frames --wall=0 -o "$T/x.pb.gz" -- /bin/true
expect_fail raw 2 "wall cannot be combined with --raw" "$PMUPROF" record --all-frames --wall --raw "$T/x.data" -o "$T/x.pb.gz" -- /bin/true
exit 0
