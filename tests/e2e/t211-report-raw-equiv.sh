#!/bin/sh
# record --raw: the capture replayed by `report -i` gives exactly the folded
# stacks of the pprof written live by the same recording (shares and the
# cgo fixture, launch mode; an attached run).  report --pprof writes the
# replayed profile.  A binary replaced after recording: one warning, its
# frames become module+offset.  --raw errors.
. "$(dirname "$0")/lib.sh"
need_perf
need_file equiv "$GOFIX/shares" "$GOFIX/demo"

equiv() { # NAME: $T/NAME.pb.gz live vs $T/NAME.data replayed
	"$PMUPROF" report -i "$T/$1.pb.gz" --folded >"$T/$1.live" 2>&1
	"$PMUPROF" report -i "$T/$1.data" --folded --pprof "$T/$1.re.pb.gz" >"$T/$1.replay" 2>"$T/$1.err"
	if [ -s "$T/$1.err" ]; then
		fail "$1-replay-quiet" "$(head -2 "$T/$1.err" | tr '\n' '|')"
	elif diff -u "$T/$1.live" "$T/$1.replay" >"$T/$1.diff"; then
		pass "$1-equiv"
	else
		head -20 "$T/$1.diff" | sed 's/^/    /'
		fail "$1-equiv" "live and replayed folded stacks differ"
	fi
	"$PMUPROF" report -i "$T/$1.re.pb.gz" --folded >"$T/$1.re" 2>&1
	if cmp -s "$T/$1.live" "$T/$1.re"; then pass "$1-pprof-out"; else fail "$1-pprof-out"; fi
	n=$(sample_count "$T/$1.rec")
	b=$(sed -n 's/^pmuprof: wrote capture .*: \([0-9]*\) bytes$/\1/p' "$T/$1.rec")
	[ -n "$n" ] && [ "$n" -gt 0 ] && echo "# $1: $n samples, capture $b bytes, $((b / n)) bytes/sample"
}

# the target memory read live (stack switches, goroutines) is in the capture
"$PMUPROF" record -e cpu-clock -F 1000 -o "$T/shares.pb.gz" --raw "$T/shares.data" \
	-- "$GOFIX/shares" 2>"$T/shares.rec"
if [ -s "$T/shares.data" ]; then pass shares-record; equiv shares; else fail shares-record "$(head -2 "$T/shares.rec")"; fi

# cgo frames behind runtime.asmcgocall come from the process's memory
if [ -x "$GOFIX/cgo" ]; then
	"$PMUPROF" record -e cpu-clock -F 1000 -o "$T/cgo.pb.gz" --raw "$T/cgo.data" \
		-- "$GOFIX/cgo" >/dev/null 2>"$T/cgo.rec"
	equiv cgo
fi

# goroutine labels and creator chains (tracebackancestors, read from memory)
if [ -x "$GOFIX/creators" ]; then
	"$PMUPROF" record -e cpu-clock -F 1000 --creators -o "$T/cre.pb.gz" --raw "$T/cre.data" \
		-- "$GOFIX/creators" -duration 1s >/dev/null 2>"$T/cre.rec"
	equiv cre
	"$PMUPROF" report -i "$T/cre.data" --pprof "$T/cre.re2.pb.gz" --folded >/dev/null 2>&1
	if gotool tool pprof -tags "$T/cre.re2.pb.gz" 2>/dev/null | grep -q ': checkout$' &&
		grep -q 'main\.spawn \[creator\]' "$T/cre.replay"; then
		pass cre-labels-creators-replayed
	else
		fail cre-labels-creators-replayed "$(head -3 "$T/cre.replay" | tr '\n' '|')"
	fi
fi

# attach mode: event ids and the maps snapshot come from the capture
"$GOFIX/shares" >/dev/null 2>&1 &
tp=$!
sleep 0.3
"$PMUPROF" record -e cpu-clock -F 1000 --creators -p $tp --duration 1 -o "$T/att.pb.gz" \
	--raw "$T/att.data" 2>"$T/att.rec"
wait_bounded $tp 20
if [ -s "$T/att.data" ]; then pass attach-record; equiv att; else fail attach-record "$(head -2 "$T/att.rec")"; fi

# a replaced binary: recorded from a copy, the copy then overwritten by another program
mkdir -p "$T/bin"
cp "$GOFIX/shares" "$T/bin/prog"
"$PMUPROF" record -q -e cpu-clock -F 500 --no-creators -o "$T/rep.pb.gz" --raw "$T/rep.data" \
	-- "$T/bin/prog" 2>"$T/rep.rec"
cp "$GOFIX/demo" "$T/bin/prog.new" && mv "$T/bin/prog.new" "$T/bin/prog"
"$PMUPROF" report -i "$T/rep.data" --folded >"$T/rep.folded" 2>"$T/rep.err"
if [ "$(wc -l <"$T/rep.err")" -eq 1 ] && grep -q "build ID .*not the binary that ran" "$T/rep.err" &&
	grep -q 'prog+0x' "$T/rep.folded" && ! grep -q 'main\.burn' "$T/rep.folded"; then
	pass buildid-mismatch
else
	fail buildid-mismatch "$(head -2 "$T/rep.err" | tr '\n' '|') $(head -1 "$T/rep.folded")"
fi
rm -f "$T/bin/prog"
"$PMUPROF" report -i "$T/rep.data" --folded >"$T/gone.folded" 2>"$T/gone.err"
if [ "$(wc -l <"$T/gone.err")" -eq 1 ] && grep -q "cannot open '.*prog'" "$T/gone.err"; then
	pass binary-missing
else
	fail binary-missing "$(head -2 "$T/gone.err" | tr '\n' '|')"
fi

expect_fail raw-bad-dir 1 "cannot write '/nonexistent/x.data'" \
	"$PMUPROF" record -e cpu-clock --raw /nonexistent/x.data -o "$T/y.pb.gz" -- /bin/true
expect_fail raw-stdout 2 "invalid --raw '-'" \
	"$PMUPROF" record -e cpu-clock --raw - -o "$T/y.pb.gz" -- /bin/true
if [ ! -e "$T/y.pb.gz" ]; then pass raw-error-no-output; else fail raw-error-no-output; fi
