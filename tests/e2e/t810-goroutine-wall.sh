#!/bin/sh
# Goroutine wall clock (record --wall, issue 18) on tests/go/wallwait:
# goroutines parked in known ways and numbers, each kind in a function of
# its own: a channel receive (main.chanWaiter), time.Sleep (main.sleeper), a
# held sync.Mutex (main.mutexWaiter), a select (main.selectWaiter), a
# sync.WaitGroup (main.wgWaiter), a read on a TCP connection on loopback
# (main.netReader), read(2) on a blocking pipe (main.pipeReader, in a
# syscall), one spinning (main.busy).  The fixture's truth: each
# goroutine's id, the wait reason its own runtime gives each function (its
# goroutine profile, debug=2), and its goroutine profile (runtime/pprof)
# written halfway through the recording.
#
# Every snapshot gives each goroutine the same weight, so a function's wall
# time over the main goroutine's (always under runtime.main) is the number
# of goroutines in it, within the snapshots in which a goroutine may not be
# in place yet (those before the fixture said ready, plus one) and those
# dropped, out of all of them.  Attached once the fixture is ready, every
# goroutine is in place from the first snapshot: each function's share of
# the wall time is its share of the goroutines within 3 points, and its
# share of the program's own goroutine profile within 3 points.
# On Go 1.19, 1.26, 1.27; launched, attached, and stripped (= plain).
#
# With --raw (launched on 1.26, attached on 1.27): the same checks on the
# live profile, and `report -i` of the capture gives it again (the text
# report, folded stacks and totals of wall and cpu).
#
# Then a goroutine made but not run yet (g.sched.pc is its function's
# entry, not a return address): named as its function, never as the end of
# the function before it in the text (-fresh: main keeps the one P).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-wall.sh"
need_perf
need_cmd go "$GO"
HZ=20
KINDS="chanWaiter:40 sleeper:20 mutexWaiter:10 selectWaiter:10 wgWaiter:10 netReader:6 pipeReader:3 busy:1"
ARGS="-chan 40 -sleep 20 -mutex 10 -select 10 -wg 10 -net 6 -pipe 3 -busy 1"

# judge NAME STRICT: the checks on $T/NAME.{pb.gz,out,gor.pb.gz}; STRICT=1 when
# every goroutine was in place from the first snapshot (attached)
judge() {
	n=$1 strict=$2
	"$PMUPROF" report -i "$T/$n.pb.gz" --sample-index wall >"$T/$n.report" 2>&1
	wall_samples "$T/$n.pb.gz" >"$T/$n.ws"
	snaps=$(wall_snaps "$T/$n.report")
	drop=$(wall_dropped "$T/$n.report")
	ready=$(awk '/^ready/ { print $2 }' "$T/$n.out")
	if [ -z "$snaps" ] || [ -z "$ready" ] || [ "$snaps" -lt 10 ] || [ ! -s "$T/$n.ws" ]; then
		fail "$n" "no wall profile: ${snaps:-no} snapshots, ready ${ready:-never}: $(head -2 "$T/$n.err" | tr '\n' '|')"
		return
	fi
	# snapshots before the fixture was ready (HZ a second at most), one more, and those dropped
	slack=$(awk -v r="$ready" -v hz=$HZ -v d="$drop" -v s="$strict" 'BEGIN { k = r * hz / 1000; printf "%d\n", s ? d : (k == int(k) ? k : int(k) + 1) + 1 + d }')
	"$PMUPROF" report -i "$T/$n.gor.pb.gz" --folded >"$T/$n.gor" 2>/dev/null
	# per function: goroutines (wall over the main goroutine's), share of the wall time,
	# share in the program's own goroutine profile
	bad=$(awk -v K="$KINDS" -v S="$snaps" -v sl="$slack" -v strict="$strict" -F '\t' '
		BEGIN { nk = split(K, kk, " "); for (i = 1; i <= nk; i++) { split(kk[i], x, ":"); f[i] = "main." x[1]; c[i] = x[2]; C += x[2] } }
		FILENAME ~ /\.gor$/ { line = $0; v = line; sub(/.* /, "", v); sub(/ [0-9]+$/, "", line)
		                      k = split(line, fr, ";")
		                      for (i = 1; i <= nk; i++) for (j = 1; j <= k; j++) if (fr[j] == f[i]) { P[i] += v; PT += v; j = k }
		                      next }
		{ k = split($5, fr, ";")
		  for (j = 1; j <= k; j++) if (fr[j] == "runtime.main") { U += $1; break }
		  for (i = 1; i <= nk; i++) for (j = 1; j <= k; j++) if (fr[j] == f[i]) { W[i] += $1; WT += $1; j = k } }
		END {
			if (!PT) { print "no goroutine profile BAD"; exit }
			for (i = 1; i <= nk; i++) {
				a = U ? W[i] / U : 0; tol = c[i] * sl / S
				sw = WT ? 100 * W[i] / WT : 0; st = 100 * c[i] / C; sp = 100 * P[i] / PT
				ptol = strict ? 3 : 3 + 100 * sl / S
				printf "%s %.2f (%d +- %.2f) %.1f%% (truth %.1f, pprof %.1f +- %.1f); ", f[i], a, c[i], tol, sw, st, sp, ptol
				if (a < c[i] - tol || a > c[i] + tol || P[i] != c[i] || sw < st - ptol || sw > st + ptol || sw < sp - ptol || sw > sp + ptol) b = 1
			}
			print (b ? "BAD" : "ok") }' "$T/$n.gor" "$T/$n.ws")
	echo "# $n: $snaps snapshots, ready at $ready ms, slack $slack: $bad"
	case $bad in *ok) pass "$n-shares" ;; *) fail "$n-shares" "$bad" ;; esac
	# wait reasons (the state for the one in a syscall) as the runtime names them
	# (of the function's samples waiting or in a syscall: a sleeper runs now and
	# then), goroutine ids as the fixture printed
	ok=1 why=
	min=$(awk -v S="$snaps" -v sl="$slack" 'BEGIN { printf "%.1f\n", 100 * (1 - sl / S) }')
	for kf in $KINDS; do
		f=${kf%%:*}
		if [ $f != busy ]; then
			want=$(awk -v f=$f '$1 == "reason" && $2 == f { $1 = $2 = ""; sub(/^  /, ""); print }' "$T/$n.out")
			set -- $(awk -v f="main.$f" -F '\t' '$3 == "waiting" || $3 == "syscall" { k = split($5, fr, ";"); for (j = 1; j <= k; j++) if (fr[j] == f) { r = $3 == "waiting" ? $4 : $3; R[r] += $1; t += $1; break } }
				END { for (r in R) if (R[r] > b) { b = R[r]; w = r }; gsub(/ /, "_", w); printf "%s %.1f\n", w, t ? 100 * b / t : 0 }' "$T/$n.ws")
			got=$(echo "${1:-}" | tr _ ' ')
			if [ "$got" != "$want" ] || ! awk -v a="${2:-0}" -v m="$min" 'BEGIN { exit !(a >= m) }'; then
				ok=0 why="$why $f: '$got' ${2:-0} % (want '$want' >= $min %)"
			fi
		fi
		awk -v f="main.$f" -F '\t' '{ k = split($5, fr, ";"); for (j = 1; j <= k; j++) if (fr[j] == f) { print $2; break } }' "$T/$n.ws" | sort -u >"$T/$n.$f.got"
		awk -v f=$f '$1 == "goid" && $2 == f { print $3 }' "$T/$n.out" | sort -u >"$T/$n.$f.want"
		if ! cmp -s "$T/$n.$f.got" "$T/$n.$f.want"; then
			x=$(comm -23 "$T/$n.$f.got" "$T/$n.$f.want" | head -1)
			ok=0 why="$why $f ids: $(wc -l <"$T/$n.$f.got") sampled, $(wc -l <"$T/$n.$f.want") printed, $(comm -3 "$T/$n.$f.got" "$T/$n.$f.want" | head -3 | tr '\n\t' '  ')${x:+ (goroutine $x: $(awk -v g="$x" -F '\t' '$2 == g { print $3 " " $4 " " $5 }' "$T/$n.ws" | sort -u | head -3 | tr '\n' '|'))}"
		fi
	done
	if [ $ok = 1 ]; then pass "$n-reasons-ids"; else fail "$n-reasons-ids" "$why"; fi
	# report: the wall by state and wait reason, the channel's the heaviest
	want=$(awk '$1 == "reason" && $2 == "chanWaiter" { $1 = $2 = ""; sub(/^  /, ""); print }' "$T/$n.out")
	first=$(sed -n '/^# by state and wait reason:/{n;p;}' "$T/$n.report")
	case $first in *" waiting "*"$want"*) pass "$n-report-states" ;; *) fail "$n-report-states" "first row '$first', want waiting $want" ;; esac
}

launch() { # NAME FIXTURE [RECORD OPTIONS]
	n=$1 fx=$2
	shift 2
	"$PMUPROF" record --all-frames -q -e cpu-clock --wall "$@" -o "$T/$n.pb.gz" -- "$fx" $ARGS -pprof "$T/$n.gor.pb.gz" 2 >"$T/$n.out" 2>"$T/$n.err"
	judge "$n" 0
}
attach() { # NAME FIXTURE [RECORD OPTIONS]
	n=$1 fx=$2
	shift 2
	: >"$T/$n.out"
	"$fx" $ARGS -pprof "$T/$n.gor.pb.gz" 2.4 >"$T/$n.out" 2>&1 &
	p=$!
	wait_ready=0
	while ! grep -q '^ready' "$T/$n.out" && [ $wait_ready -lt 50 ]; do sleep 0.1; wait_ready=$((wait_ready + 1)); done
	"$PMUPROF" record --all-frames -q -e cpu-clock --wall=$HZ "$@" -p $p --duration 1.6 -o "$T/$n.pb.gz" 2>"$T/$n.err"
	wait $p
	judge "$n" 1
}

launches="go go126 go127" fresh="go go127"
if [ -n "$SAN" ]; then # the same code on every version: fewer of them
	launches=go126 fresh=go127
	echo "# ASan pass: launched on Go 1.26, attached on 1.26 and 1.27 stripped, fresh on 1.27 (all in the normal pass)"
fi
for v in $launches; do
	if [ ! -x "$FIX/$v/wallwait" ]; then
		skip "$v" "no $FIX/$v/wallwait (scripts/fixtures.sh)"
		continue
	fi
	launch "$v-launch" "$FIX/$v/wallwait"
done
[ -x "$FIX/go126/wallwait" ] && attach go126-attach "$FIX/go126/wallwait"
[ -x "$FIX/go127/wallwait" ] && attach go127-stripped-attach "$FIX/go127/wallwait-stripped"
[ -z "$SAN" ] && [ -x "$GOFIX/wallwait" ] && attach go119-stripped-attach "$GOFIX/wallwait-stripped"

# --raw: the snapshots in the capture, replayed to the live profile
if [ -x "$FIX/go126/wallwait" ]; then
	launch go126-raw "$FIX/go126/wallwait" --raw "$T/go126-raw.data"
	replay_equiv go126-raw "$T/go126-raw.pb.gz" "$T/go126-raw.data" wall cpu
fi
if [ -z "$SAN" ] && [ -x "$FIX/go127/wallwait" ]; then
	attach go127-raw-attach "$FIX/go127/wallwait" --raw "$T/go127-raw-attach.data"
	replay_equiv go127-raw-attach "$T/go127-raw-attach.pb.gz" "$T/go127-raw-attach.data" wall
fi

# goroutines made and never run: their stack is their function (g.sched.pc its
# entry), never the function before it in the text
for v in $fresh; do
	[ -x "$FIX/$v/wallwait" ] || continue
	GODEBUG=asyncpreemptoff=1 "$PMUPROF" record -q -e cpu-clock --wall -o "$T/fresh-$v.pb.gz" -- "$FIX/$v/wallwait" -fresh 20 1.2 >"$T/fresh-$v.out" 2>"$T/fresh-$v.err"
	wall_samples "$T/fresh-$v.pb.gz" >"$T/fresh-$v.ws"
	"$PMUPROF" report -i "$T/fresh-$v.pb.gz" --sample-index wall >"$T/fresh-$v.report" 2>&1
	snaps=$(wall_snaps "$T/fresh-$v.report")
	set -- $(awk -F '\t' -v S="${snaps:-0}" '
		{ k = split($5, fr, ";"); leaf = fr[k]
		  for (j = 1; j <= k; j++) if (fr[j] == "runtime.main") { U += $1; break }
		  if (leaf == "main.fresh") F += $1
		  else if ($3 == "runnable" && $5 ~ /(^|;)main\./) { bad++; what = $5 } }
		END { a = U ? F / U : 0; printf "%.2f %d %s\n", a, bad, (S >= 8 && a >= 20 * (1 - 2 / S) && a <= 20.01 && !bad) ? "ok" : "BAD:" what }' "$T/fresh-$v.ws")
	echo "# fresh-$v: ${snaps:-no} snapshots, main.fresh $1 goroutines (20), $2 runnable elsewhere"
	case ${3:-} in ok) pass "fresh-$v" ;; *) fail "fresh-$v" "main.fresh ${1:-?} goroutines of 20, ${2:-?} runnable under another function (${3:-})" ;; esac
done

# (--creators with --wall: t812)

# usage: a bad rate
expect_fail bad-rate 2 "invalid --wall '0'" "$PMUPROF" record --all-frames --wall=0 -o "$T/x.pb.gz" -- /bin/true
exit 0
