#!/bin/sh
# Goroutine-aware profiles on tests/go/creators (Go 1.19): pprof labels read
# from outside, goroutine ids, creator frames (--creators=1: one level, the
# creating goroutines' stacks with --creators), --no-creators in report, the
# one-helper scenario, attach (with tracebackancestors, and without it:
# goroutine creations watched by uprobes), and an unknown Go version.  Known answers:
# main.work splits 70/30 between the http and grpc listeners (labels
# handler=checkout/search), and 1:2:3 between main.site1..3; each +-3 pp.
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
		END { for (i = 1; i <= n; i++) printf "%.1f ", t ? 100 * s[i] / t : 0; print "" }' "$f"
}
# attach NAME SECS CREATORS FIXTURE-ARGS...: run the fixture (GODEBUG as the
# caller's environment says), attach for SECS after 1 s, fold into $T/NAME.folded
attach() {
	an=$1 as=$2 ac=$3
	shift 3
	"$fx" "$@" >/dev/null &
	apid=$!
	sleep 1
	"$PMUPROF" record -e cpu-clock -F 1000 "$ac" -p $apid --duration "$as" -o "$T/$an.pb.gz" 2>"$T/$an.err"
	kill $apid 2>/dev/null
	wait $apid 2>/dev/null
	"$PMUPROF" report -i "$T/$an.pb.gz" --folded >"$T/$an.folded"
}
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d <= 3 && d >= -3) }'; }

# ---- launch, --creators ----
"$PMUPROF" record -q -e cpu-clock -F 1000 --creators -o "$T/c.pb.gz" -- "$fx" -duration 3s >/dev/null 2>"$T/c.err"
"$PMUPROF" report -i "$T/c.pb.gz" --folded >"$T/c.folded"
set -- $(work_split "$T/c.folded" main.httpListener main.grpcListener)
echo "# launch --creators: http $1 % grpc $2 % of main.work"
if near "$1" 70 && near "$2" 30; then pass launch-split-70-30; else fail launch-split-70-30 "http $1 grpc $2"; fi
# the full chain: main -> listener -> request -> handler -> spawn, then the worker's own stack
if grep -q 'main\.main \[creator\];main\.httpListener \[creator\];main\.serveHTTP \[creator\];.*main\.handle \[creator\];main\.spawn \[creator\];runtime\.goexit;main\.spawn\.func1;main\.handle\.func1;main\.work [0-9]' "$T/c.folded"; then
	pass launch-chain
else
	fail launch-chain "$(grep 'main.work ' "$T/c.folded" | sort -t' ' -k2 -rn | head -1)"
fi
# labels read from outside, and go tool pprof selects by them
gotool tool pprof -tags "$T/c.pb.gz" 2>/dev/null >"$T/tags"
ck=$(awk '/^ handler:/ { h = 1; next } h && /: checkout$/ { gsub(/[(%):]/, "", $2); print $2; exit }' "$T/tags")
echo "# labels: handler=checkout ${ck:-?} %"
if [ -n "$ck" ] && near "$ck" 70; then pass labels-share; else fail labels-share "checkout ${ck:-none}: $(grep -A3 handler "$T/tags" | tr '\n' '|')"; fi
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
"$PMUPROF" record -q -e cpu-clock -F 1000 --creators=1 -o "$T/d.pb.gz" -- "$fx" -duration 1s -ids >"$T/ids" 2>"$T/d.err"
"$PMUPROF" report -i "$T/d.pb.gz" --folded >"$T/d.folded"
if grep -Eq '^main\.spawn \[creator\];runtime\.goexit;main\.spawn\.func1;main\.handle\.func1;main\.work [0-9]+$' "$T/d.folded" &&
	! grep -q 'Listener \[creator\]' "$T/d.folded"; then
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
"$PMUPROF" record -q -e cpu-clock -F 1000 --creators -o "$T/h.pb.gz" -- "$fx" -helper -duration 3s 2>"$T/h.err"
"$PMUPROF" report -i "$T/h.pb.gz" --folded >"$T/h.folded"
set -- $(work_split "$T/h.folded" main.site1 main.site2 main.site3)
echo "# helper: site1 $1 % site2 $2 % site3 $3 %"
if near "$1" 16.7 && near "$2" 33.3 && near "$3" 50; then pass helper-1-2-3; else fail helper-1-2-3 "$1 $2 $3"; fi

# ---- attach to a process started with GODEBUG=tracebackancestors ----
GODEBUG=tracebackancestors=8 attach a 3 --creators -duration 8s
set -- $(work_split "$T/a.folded" main.httpListener main.grpcListener)
echo "# attach --creators: http $1 % grpc $2 %"
if near "$1" 70 && near "$2" 30; then pass attach-split-70-30; else fail attach-split-70-30 "http $1 grpc $2: $(head -2 "$T/a.err" | tr '\n' '|')"; fi

# ---- attach without tracebackancestors: creations watched by uprobes ----
# (tracefs mounted so that threads started later are probed too)
mounted=
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ] &&
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
	mounted=/sys/kernel/tracing
fi
if [ -r /sys/bus/event_source/devices/uprobe/type ]; then
	# shorter rounds: most goroutines are created while attached
	attach p 3 --creators -unit 6000000 -duration 7s
	set -- $(work_split "$T/p.folded" main.httpListener main.grpcListener)
	seen=$(gotool tool pprof -raw "$T/p.pb.gz" 2>/dev/null | sed -n 's/.*creators: \([0-9]*\) goroutine creations seen by uprobes.*/\1/p')
	echo "# attach, uprobes: http $1 % grpc $2 %; ${seen:-?} creations seen"
	if near "$1" 70 && near "$2" 30; then pass probes-split-70-30; else fail probes-split-70-30 "http $1 grpc $2: $(head -2 "$T/p.err" | tr '\n' '|')"; fi
	# three levels and more: the full chain, as with tracebackancestors
	left=$(grep -c 'pmuprof_' /sys/kernel/tracing/uprobe_events 2>/dev/null)
	if grep -q 'main\.main \[creator\];.*main\.httpListener \[creator\];.*main\.serveHTTP \[creator\];.*main\.handle \[creator\];main\.spawn \[creator\];runtime\.goexit;main\.spawn\.func1;main\.handle\.func1;main\.work [0-9]' "$T/p.folded" &&
		! grep -q 'warning: creators' "$T/p.err" && [ "${left:-0}" = 0 ]; then
		pass probes-chain
	else
		fail probes-chain "$(grep 'main.work ' "$T/p.folded" | sort -t' ' -k2 -rn | head -1 | cut -c1-300); probes left: ${left:-0}; $(head -2 "$T/p.err" | tr '\n' '|')"
	fi
	attach q 3 --creators -helper -unit 6000000 -duration 7s
	set -- $(work_split "$T/q.folded" main.site1 main.site2 main.site3)
	echo "# attach, uprobes, helper: site1 $1 % site2 $2 % site3 $3 %"
	if near "$1" 16.7 && near "$2" 33.3 && near "$3" 50; then pass probes-helper-1-2-3; else fail probes-helper-1-2-3 "$1 $2 $3: $(head -2 "$T/q.err" | tr '\n' '|')"; fi
	# one level cannot tell the call sites apart: no main.siteN [creator] frame at all
	attach r 1 --creators=1 -helper -unit 6000000 -duration 4s
	if ! grep -q 'main\.site[123] \[creator\]' "$T/r.folded" && grep -q '^main\.Go \[creator\];' "$T/r.folded"; then
		pass probes-one-level-blind
	else
		fail probes-one-level-blind "$(grep 'main.work ' "$T/r.folded" | head -2 | tr '\n' '|')"
	fi
else
	skip probes "no uprobe PMU in this kernel"
fi
[ -n "$mounted" ] && umount "$mounted"

# ---- an unknown Go version: one warning, a correct profile without goroutines ----
python3 -c 'import sys; b = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(b.replace(b"go1.19", b"go1.09"))' \
	"$GOFIX/creators-stripped" "$T/oldgo" && chmod +x "$T/oldgo"
"$PMUPROF" record -q -e cpu-clock -F 1000 -o "$T/u.pb.gz" -- "$T/oldgo" -duration 1s >/dev/null 2>"$T/u.err"
"$PMUPROF" report -i "$T/u.pb.gz" --folded >"$T/u.folded"
w=$(grep -c 'goroutine ids, labels and creators are off' "$T/u.err")
s=$(share "$T/u.folded" main.work)
if [ "$w" -eq 1 ] && ! grep -q '\[creator\]' "$T/u.folded" && awk -v s="$s" 'BEGIN { exit !(s >= 90) }'; then
	pass unknown-version
else
	fail unknown-version "$w warnings, main.work $s %: $(head -2 "$T/u.err" | tr '\n' '|')"
fi
