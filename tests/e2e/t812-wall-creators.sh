#!/bin/sh
# san: no (10 000 goroutines a snapshot: under ASan too few snapshots; t810 and t813 run the wall paths under it)
# A goroutine leak seen by its creators (record --wall --creators, issue 18):
# 10 000 goroutines blocked on one channel in main.leaked, made by two
# request paths, main.handleA for 70 % of them and main.handleB for 30 %
# (tests/go/wallwait -leak, which prints how many each made).  The wall time
# of main.leaked splits between its two creators as the fixture made them,
# within 3 points; and main.leaked holds the 10 000 goroutines (its wall
# time over the main goroutine's), within the snapshots before the fixture
# was ready, plus one, and those dropped.  Launched (the creation probe)
# and attached (the go statements), on Go 1.19 (stripped), 1.26 and 1.27.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-wall.sh"
need_perf
need_cmd go "$GO"
N=10000 HZ=20

judge() { # NAME STRICT
	n=$1 strict=$2
	"$PMUPROF" report -i "$T/$n.pb.gz" --sample-index wall >"$T/$n.report" 2>&1
	"$PMUPROF" report -i "$T/$n.pb.gz" --sample-index wall --folded >"$T/$n.folded" 2>/dev/null
	snaps=$(wall_snaps "$T/$n.report")
	drop=$(wall_dropped "$T/$n.report")
	ready=$(awk '/^ready/ { print $2 }' "$T/$n.out")
	set -- $(awk '$1 == "leak" { print $2, $3 }' "$T/$n.out")
	if [ -z "$snaps" ] || [ -z "$ready" ] || [ $# -ne 2 ] || [ "$snaps" -lt 2 ]; then
		fail "$n" "no wall profile: ${snaps:-no} snapshots, ready ${ready:-never}: $(head -2 "$T/$n.err" | tr '\n' '|')"
		return
	fi
	slack=$(awk -v r="$ready" -v hz=$HZ -v d="$drop" -v s="$strict" 'BEGIN { k = r * hz / 1000; printf "%d\n", s ? 1 + d : (k == int(k) ? k : int(k) + 1) + 1 + d }')
	res=$(awk -v A="$1" -v B="$2" -v S="$snaps" -v sl="$slack" '
		{ v = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";")
		  for (i = 1; i <= k; i++) if (fr[i] == "runtime.main") { U += v; break }
		  leak = 0; for (i = 1; i <= k; i++) if (fr[i] == "main.leaked") leak = 1
		  if (!leak) next
		  L += v; a = b = 0
		  for (i = 1; i <= k; i++) { if (fr[i] == "main.handleA [creator]") a = 1; if (fr[i] == "main.handleB [creator]") b = 1 }
		  if (a && !b) LA += v; else if (b && !a) LB += v; else { O += v; other = line } }
		END { n = U ? L / U : 0; tol = (A + B) * sl / S
		      pa = L ? 100 * LA / L : 0; pb = L ? 100 * LB / L : 0; wa = 100 * A / (A + B)
		      printf "goroutines %.0f (%d +- %.0f), handleA %.1f %% handleB %.1f %% (want %.1f +- 3) other %.1f %%", n, A + B, tol, pa, pb, wa, L ? 100 * O / L : 0
		      print (n >= A + B - tol && n <= A + B + tol && pa >= wa - 3 && pa <= wa + 3 && pb >= 100 - wa - 3 && pb <= 100 - wa + 3) ? " ok" : " BAD " substr(other, 1, 200) }' "$T/$n.folded")
	echo "# $n: $snaps snapshots, ready at $ready ms, slack $slack: $res"
	case $res in *" ok") pass "$n" ;; *) fail "$n" "$res" ;; esac
}

launch() { # NAME FIXTURE
	"$PMUPROF" record -q -e cpu-clock --wall --creators -o "$T/$1.pb.gz" -- "$2" -leak $N 2 >"$T/$1.out" 2>"$T/$1.err"
	judge "$1" 0
}
attach() { # NAME FIXTURE
	: >"$T/$1.out"
	"$2" -leak $N 2.5 >"$T/$1.out" 2>&1 &
	p=$!
	w=0
	while ! grep -q '^ready' "$T/$1.out" && [ $w -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
	"$PMUPROF" record -q -e cpu-clock --wall=$HZ --creators -p $p --duration 1.5 -o "$T/$1.pb.gz" 2>"$T/$1.err"
	wait $p
	judge "$1" 1
}

ran=0
if [ -x "$FIX/go126/wallwait" ]; then
	launch go126-launch "$FIX/go126/wallwait"
	attach go126-attach "$FIX/go126/wallwait"
	ran=1
fi
if [ -x "$FIX/go127/wallwait" ]; then
	launch go127-stripped-launch "$FIX/go127/wallwait-stripped"
	ran=1
fi
if [ -x "$GOFIX/wallwait" ]; then
	attach go119-stripped-attach "$GOFIX/wallwait-stripped"
	ran=1
fi
[ $ran = 1 ] || skip fixtures "no wallwait fixture (scripts/fixtures.sh)"
exit 0
