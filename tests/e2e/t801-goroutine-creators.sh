#!/bin/sh
# Goroutine-aware profiles on tests/go/creators (Go 1.19): pprof labels read
# from outside, goroutine ids, creator frames (--creators=1: one level, the
# creating goroutines' stacks with --creators), --no-creators in report, the
# one-helper scenario, attach (with tracebackancestors, and without it:
# goroutine creations watched by uprobes), and an unknown Go version.  Known answers:
# main.work splits 70/30 between the http and grpc listeners (labels
# handler=checkout/search), and 1:2:3 between main.site1..3 over whole
# rounds; the fixture (-truth) prints the work it did per creator, for the
# whole run or the window between two SIGUSR1 (an attach starts and ends
# within rounds), and each share must match that truth within 3.5 standard
# deviations of a share of that many samples, plus 1 pp.
. "$(dirname "$0")/lib.sh"
need_perf
need_file creators "$GOFIX/creators" "$GOFIX/creators-stripped"
need_cmd go "$GO"
fx=$GOFIX/creators

# percent of main.work samples whose stack has frame $2 [creator], of those with any of $2 $3 ...
work_split() {
	f=$1
	shift
	awk -v names="$*" 'BEGIN { n = split(names, nm, " ") }
		$0 ~ /;main\.work [0-9]+$/ { c = $NF; for (i = 1; i <= n; i++) if (index($0, nm[i] " [creator]")) { s[i] += c; t += c; break } }
		END { for (i = 1; i <= n; i++) printf "%.1f ", t ? 100 * s[i] / t : 0; print t + 0 }' "$f"
}
# truth FILE KEY...: percent of the work done for each KEY (http, grpc,
# site1..3) by the fixture's own accounting: its last "truth" line in FILE,
# less the one before when there are two (the window between two SIGUSR1)
truth() {
	tf=$1
	shift
	awk -v keys="$*" 'BEGIN { n = split(keys, k, " ") }
		/^truth / { for (i = 2; i <= NF; i++) { split($i, kv, "="); prev[kv[1]] = cur[kv[1]]; cur[kv[1]] = kv[2] } lines++ }
		END { for (i = 1; i <= n; i++) { d[i] = cur[k[i]] - (lines >= 2 ? prev[k[i]] : 0); t += d[i] }
			for (i = 1; i <= n; i++) printf "%.1f ", t ? 100 * d[i] / t : -100; print "" }' "$tf"
}
# near OBS WANT N: |OBS - WANT| (percent) within 3.5 standard deviations of
# a share of N samples (binomial), plus 1 pp for the edges of the window
# (a SIGUSR1 is not the instant the recording starts); false for N < 50
near() {
	awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { if (n < 50 || b < 0) exit 1; p = b / 100;
		tol = 100 * 3.5 * sqrt(p * (1 - p) / n) + 1; d = a - b; exit !(d <= tol && d >= -tol) }'
}
tol() { awk -v b="$1" -v n="$2" 'BEGIN { p = b / 100; if (n > 0) printf "%.1f", 100 * 3.5 * sqrt(p * (1 - p) / n) + 1; else print "inf" }'; }
# attach NAME SECS CREATORS FIXTURE-ARGS...: run the fixture (GODEBUG as the
# caller's environment says), attach for SECS after 1 s, fold into $T/NAME.folded
attach() {
	an=$1 as=$2 ac=$3
	shift 3
	"$fx" -truth "$@" >"$T/$an.out" &
	apid=$!
	sleep 1
	kill -USR1 $apid
	"$PMUPROF" record --all-frames -e cpu-clock -F 1000 "$ac" -p $apid --duration "$as" -o "$T/$an.pb.gz" 2>"$T/$an.err"
	kill -USR1 $apid
	# the second truth line before the end (bounded: 5 s)
	_w=0
	while [ "$(grep -c '^truth ' "$T/$an.out")" -lt 2 ] && [ $_w -lt 50 ]; do sleep 0.1; _w=$((_w + 1)); done
	kill $apid 2>/dev/null
	wait $apid 2>/dev/null
	"$PMUPROF" report -i "$T/$an.pb.gz" --folded >"$T/$an.folded"
}

# ---- launch, --creators ----
"$PMUPROF" record --all-frames -q -e cpu-clock -F 1000 --creators -o "$T/c.pb.gz" -- "$fx" -truth -duration 3s >"$T/c.out" 2>"$T/c.err"
"$PMUPROF" report -i "$T/c.pb.gz" --folded >"$T/c.folded"
set -- $(work_split "$T/c.folded" main.httpListener main.grpcListener) $(truth "$T/c.out" http grpc)
ck_want=$4 ck_n=$3
echo "# launch --creators: http $1 % grpc $2 % of $3 main.work samples; the fixture's work: http $4 % grpc $5 % (+-$(tol "$4" "$3"))"
if near "$1" "$4" "$3" && near "$2" "$5" "$3"; then pass launch-split-70-30; else fail launch-split-70-30 "http $1 grpc $2 of $3, truth $4 $5"; fi
# the full chain: main -> listener -> request -> handler -> spawn, then the worker's own stack
# (the go statements' wrappers, main.main.funcN, are frames of the stacks the kernel walks)
if grep -Eq 'main\.main \[creator\];(main\.main\.func[0-9]+ \[creator\];)?main\.httpListener \[creator\];(main\.httpListener\.func[0-9]+ \[creator\];)?main\.serveHTTP \[creator\];.*main\.handle \[creator\];main\.spawn \[creator\];runtime\.goexit;main\.spawn\.func1;main\.handle\.func1;main\.work [0-9]' "$T/c.folded"; then
	pass launch-chain
else
	fail launch-chain "$(grep 'main.work ' "$T/c.folded" | sort -t' ' -k2 -rn | head -1)"
fi
# labels read from outside, and go tool pprof selects by them
gotool tool pprof -tags "$T/c.pb.gz" 2>/dev/null >"$T/tags"
ck=$(awk '/^ handler:/ { h = 1; next } h && /: checkout$/ { gsub(/[(%):]/, "", $2); print $2; exit }' "$T/tags")
echo "# labels: handler=checkout ${ck:-?} %; the fixture's work: http $ck_want %"
if [ -n "$ck" ] && near "$ck" "$ck_want" "$ck_n"; then pass labels-share; else fail labels-share "checkout ${ck:-none}, truth $ck_want: $(grep -A3 handler "$T/tags" | tr '\n' '|')"; fi
gotool tool pprof -tagfocus=handler=search -tags "$T/c.pb.gz" 2>/dev/null >"$T/tags2"
if grep -q ': search$' "$T/tags2" && ! grep -q ': checkout$' "$T/tags2"; then pass tagfocus; else fail tagfocus "$(grep -A3 handler "$T/tags2" | tr '\n' '|')"; fi

# ---- report --no-creators: the plain view from the same file ----
"$PMUPROF" report --no-creators -i "$T/c.pb.gz" --folded >"$T/nc.folded"
if ! grep -q '\[creator\]' "$T/nc.folded" && grep -Eq '^runtime\.goexit;main\.spawn\.func1;main\.handle\.func1;main\.work [0-9]+$' "$T/nc.folded" &&
	[ "$(folded_total "$T/nc.folded")" -eq "$(folded_total "$T/c.folded")" ]; then
	pass report-no-creators
else
	fail report-no-creators "$(head -2 "$T/nc.folded" | tr '\n' '|')"
fi

# ---- --creators=1: one level (the go statement) ----
"$PMUPROF" record --all-frames -q -e cpu-clock -F 1000 --creators=1 -o "$T/d.pb.gz" -- "$fx" -duration 1s -ids >"$T/ids" 2>"$T/d.err"
"$PMUPROF" report -i "$T/d.pb.gz" --folded >"$T/d.folded"
# (the work's stacks: the goroutines that run spawn have their own one level,
# a listener, seen in samples of the creation probe's trap, now that the
# kernel's time counts)
if grep -Eq '^main\.spawn \[creator\];runtime\.goexit;main\.spawn\.func1;main\.handle\.func1;main\.work [0-9]+$' "$T/d.folded" &&
	! grep 'main\.work [0-9]*$' "$T/d.folded" | grep -q 'Listener \[creator\]'; then
	pass one-level
else
	fail one-level "$(grep 'main.work ' "$T/d.folded" | head -2 | tr '\n' '|')"
fi
# goroutine ids: those of the main.work samples are ids the workers printed
gotool tool pprof -focus='^main\.work$' -tags "$T/d.pb.gz" 2>/dev/null |
	awk '/^ goroutine:/ { g = 1; next } g && NF == 0 { exit } g { print $NF }' | sort -u >"$T/sampled"
sed -n 's/^worker goid=\([0-9]*\) .*/\1/p' "$T/ids" | sort -u >"$T/printed"
extra=$(comm -23 "$T/sampled" "$T/printed" | tr '\n' ' ')
if [ -s "$T/sampled" ] && [ -z "$extra" ] && [ "$(wc -l <"$T/sampled")" -ge 5 ]; then
	pass goroutine-ids
else
	fail goroutine-ids "sampled $(tr '\n' ' ' <"$T/sampled") not printed: $extra"
fi

# ---- one helper for everything, three call sites 1:2:3 ----
"$PMUPROF" record --all-frames -q -e cpu-clock -F 1000 --creators -o "$T/h.pb.gz" -- "$fx" -truth -helper -duration 3s >"$T/h.out" 2>"$T/h.err"
"$PMUPROF" report -i "$T/h.pb.gz" --folded >"$T/h.folded"
# near3 NAME: the three site shares of $1..$3 ($4 samples) against the truth $5..$7
near3() {
	echo "# $1: site1 $2 % site2 $3 % site3 $4 % of $5 samples; the fixture's work: $6 % $7 % $8 % (+-$(tol "$8" "$5"))"
	if near "$2" "$6" "$5" && near "$3" "$7" "$5" && near "$4" "$8" "$5"; then pass "$1"; else fail "$1" "$2 $3 $4 of $5, truth $6 $7 $8${9:+: $9}"; fi
}
near3 helper-1-2-3 $(work_split "$T/h.folded" main.site1 main.site2 main.site3) $(truth "$T/h.out" site1 site2 site3)

# ---- attach to a process started with GODEBUG=tracebackancestors ----
GODEBUG=tracebackancestors=8 attach a 3 --creators -duration 8s
set -- $(work_split "$T/a.folded" main.httpListener main.grpcListener) $(truth "$T/a.out" http grpc)
echo "# attach --creators: http $1 % grpc $2 % of $3; the fixture's work while attached: http $4 % grpc $5 % (+-$(tol "$4" "$3"))"
if near "$1" "$4" "$3" && near "$2" "$5" "$3"; then pass attach-split-70-30; else fail attach-split-70-30 "http $1 grpc $2 of $3, truth $4 $5: $(head -2 "$T/a.err" | tr '\n' '|')"; fi

# ---- attach without tracebackancestors: creations watched by uprobes ----
# (defined in tracefs, which pmuprof mounts for itself, so that threads started later are probed too)
if [ -r /sys/bus/event_source/devices/uprobe/type ] && tracefs_ok; then
	# shorter rounds: most goroutines are created while attached
	attach p 3 --creators -unit 6000000 -duration 7s
	set -- $(work_split "$T/p.folded" main.httpListener main.grpcListener) $(truth "$T/p.out" http grpc)
	seen=$(gotool tool pprof -raw "$T/p.pb.gz" 2>/dev/null | sed -n 's/.*creators: \([0-9]*\) goroutine creations seen by the probe.*/\1/p')
	echo "# attach, uprobes: http $1 % grpc $2 % of $3; the fixture's work while attached: http $4 % grpc $5 % (+-$(tol "$4" "$3")); ${seen:-?} creations seen"
	if near "$1" "$4" "$3" && near "$2" "$5" "$3"; then pass probes-split-70-30; else fail probes-split-70-30 "http $1 grpc $2 of $3, truth $4 $5: $(head -2 "$T/p.err" | tr '\n' '|')"; fi
	# three levels and more: the full chain, as with tracebackancestors
	left=$(probes_left)
	if grep -q 'main\.main \[creator\];.*main\.httpListener \[creator\];.*main\.serveHTTP \[creator\];.*main\.handle \[creator\];main\.spawn \[creator\];runtime\.goexit;main\.spawn\.func1;main\.handle\.func1;main\.work [0-9]' "$T/p.folded" &&
		! grep -q 'warning: creators' "$T/p.err" && [ "${left:-0}" = 0 ]; then
		pass probes-chain
	else
		fail probes-chain "$(grep 'main.work ' "$T/p.folded" | sort -t' ' -k2 -rn | head -1 | cut -c1-300); probes left: ${left:-0}; $(head -2 "$T/p.err" | tr '\n' '|')"
	fi
	if [ -n "$SAN" ]; then
		echo "# ASan pass: the helper and one-level attach cases run in the normal pass only (the same code as above)"
	else
	attach q 3 --creators -helper -unit 6000000 -duration 7s
	near3 probes-helper-1-2-3 $(work_split "$T/q.folded" main.site1 main.site2 main.site3) $(truth "$T/q.out" site1 site2 site3) "$(head -2 "$T/q.err" | tr '\n' '|')"
	# one level cannot tell the call sites apart: no main.siteN [creator] frame at all
	attach r 1 --creators=1 -helper -unit 6000000 -duration 4s
	if ! grep -q 'main\.site[123] \[creator\]' "$T/r.folded" && grep -q '^main\.Go \[creator\];' "$T/r.folded"; then
		pass probes-one-level-blind
	else
		fail probes-one-level-blind "$(grep 'main.work ' "$T/r.folded" | head -2 | tr '\n' '|')"
	fi
	fi
else
	skip probes "no uprobe PMU in this kernel, or no tracefs for pmuprof"
fi

# ---- an unknown Go version: one warning, a correct profile without goroutines ----
python3 -c 'import sys; b = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(b.replace(b"go1.19", b"go1.09"))' \
	"$GOFIX/creators-stripped" "$T/oldgo" && chmod +x "$T/oldgo"
"$PMUPROF" record --all-frames -q -e cpu-clock -F 1000 -o "$T/u.pb.gz" -- "$T/oldgo" -duration 1s >/dev/null 2>"$T/u.err"
"$PMUPROF" report -i "$T/u.pb.gz" --folded >"$T/u.folded"
w=$(grep -c 'goroutine ids, labels and creators are off' "$T/u.err")
s=$(share "$T/u.folded" main.work)
# (a property of the fixture, not of the machine: all its CPU but the
# goroutine launches of each round is main.work's loop)
echo "# unknown version: main.work $s % of the samples"
if [ "$w" -eq 1 ] && ! grep -q '\[creator\]' "$T/u.folded" && awk -v s="$s" 'BEGIN { exit !(s >= 90) }'; then
	pass unknown-version
else
	fail unknown-version "$w warnings, main.work $s %: $(head -2 "$T/u.err" | tr '\n' '|')"
fi
