#!/bin/sh
# A target that corrupts its own runtime while profiled with every kind at
# once (tests/go/hostile): runtime.allgs' length 1 << 40, two goroutines'
# stack bounds at an unmapped page and over the whole address space, the
# heap records' list (runtime.mbuckets) a cycle, a g.waitreason of 255, a
# label set of 102 labels with a 1 MB key and a 1 MB value.  pmuprof must
# exit 0 with a profile `go tool pprof` reads, samples of the parts never
# corrupted (main.spin's CPU, main.parked's wall clock, main.allocBig's
# heap), what it could not read counted in the comments, never guessed:
#
#   allgs    the goroutines read all the same ("lists read short" > 0, no
#            snapshot without them), main.parked in the wall profile
#   stack    main.victimHuge's stack walked (its bounds hold its sp: the
#            read stops at 4 KB), main.victimLow's dropped (counted)
#   buckets  attached after the cycle was made (launched, pmuprof walked
#            the list before): heap records read, the cycle counted
#   reason   main.victimReason's wait_reason "unknown (255)", never
#            "preempted" (255 was that marker), counted
#   labels   main.labeled's samples keep the label "big" (cut to 512 bytes),
#            the cut counted ("label sets read cut")
#
# The bounds, stated (measured with Go 1.26 on a 2-core VM, normal build:
# max RSS 17-24 MB, 3.4-5.3 s for 3 s corrupted; the inuse read of the
# cycle took 1175 ms of CPU and 50 MB before its fix):
#   max RSS of pmuprof    < 200 MB  (RSS_MAX_KB)
#   its wall time         < the target's run + 10 s (a hang: timeout 60 s)
#   one --inuse read      < 250 ms of CPU ("at most N ms a read")
# Under ASan ($SAN) only the `all` cases run (launched and attached): the
# one-mode runs repeat their code paths.
. "$(dirname "$0")/lib.sh"

need_perf
need_tracefs
HX=$FIX/go126/hostile
need_file hostile "$HX"
RSS_MAX_KB=204800
SECS=1.5

# run NAME MODE [-p]: record every kind at once into $T/NAME.*; the
# fixture's output in $T/NAME.fix, pmuprof's in .err, "SECONDS MAXRSS_KB"
# in .time, pmuprof's exit status in .rc
run() {
	_n=$1 _m=$2 _att=${3:-}
	if [ "$_att" = -p ]; then
		"$HX" -mode "$_m" -secs 3 >"$T/$_n.fix" &
		_fp=$!
		_i=0
		while ! grep -q '^applied' "$T/$_n.fix" && [ $_i -lt 100 ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
		set -- -p "$_fp" --duration 1.5
	else
		set -- -- "$HX" -mode "$_m" -secs "$SECS"
	fi
	timeout -k 5 60 /usr/bin/time -o "$T/$_n.time" -f '%e %M' "$PMUPROF" record -e cpu-clock \
		-F 999 --wall --off-cpu --locks --alloc --inuse --creators -o "$T/$_n.pb.gz" "$@" \
		>"$T/$_n.out" 2>"$T/$_n.err"
	echo $? >"$T/$_n.rc"
	[ "${_fp:-}" ] && wait "$_fp"
	_fp=
	if [ -z "$_att" ]; then
		cat "$T/$_n.out" >"$T/$_n.fix"
	fi
	gotool tool pprof -comments "$T/$_n.pb.gz" >"$T/$_n.comments" 2>/dev/null
}

# top NAME INDEX FUNC: FUNC's cumulative value in sample type INDEX (0 when absent)
has() {
	gotool tool pprof -top -cum -sample_index="$2" "$T/$1.pb.gz" 2>/dev/null |
		awk -v f="$3" '$NF == f { found = 1 } END { exit !found }'
}

# num NAME REGEX: the number the first comment line matching REGEX (its
# first parenthesised group, sed -E) holds
num() { sed -En "s/.*$2.*/\\1/p" "$T/$1.comments" | head -1; }

common() { # NAME RUN-SECONDS: the checks every run passes
	_n=$1
	if [ "$(cat "$T/$_n.rc")" != 0 ]; then
		fail "$_n/exit" "pmuprof exit $(cat "$T/$_n.rc"): $(tail -2 "$T/$_n.err" | tr '\n' '|')"
		return 1
	fi
	pass "$_n/exit"
	check "$_n/fixture-ran" grep -q '^applied\|^done' "$T/$_n.fix"
	check "$_n/pprof-reads" sh -c "gotool() { GOCACHE=$FIX/gocache $GO \"\$@\"; }; gotool tool pprof -raw '$T/$_n.pb.gz' | grep -q 'Samples:'"
	read -r _s _kb <"$T/$_n.time"
	if [ "$_kb" -lt $RSS_MAX_KB ]; then pass "$_n/rss"; else fail "$_n/rss" "$_kb KB >= $RSS_MAX_KB KB"; fi
	if awk -v s="$_s" -v b="$2" 'BEGIN { exit !(s < b + 10) }'; then pass "$_n/time"; else fail "$_n/time" "$_s s >= $2 + 10 s"; fi
	echo "# $_n: $_s s, max RSS $_kb KB"
	_ms=$(num "$_n" 'at most ([0-9.]+) ms a read')
	if [ -n "$_ms" ] && awk -v m="$_ms" 'BEGIN { exit !(m < 250) }'; then
		pass "$_n/inuse-read-cpu"
	else
		fail "$_n/inuse-read-cpu" "at most '$_ms' ms a read, bound 250"
	fi
	if has "$_n" cpu main.spin; then pass "$_n/cpu-spin"; else fail "$_n/cpu-spin" "no CPU sample of main.spin"; fi
	if has "$_n" wall main.parked; then pass "$_n/wall-parked"; else fail "$_n/wall-parked" "no wall sample of main.parked"; fi
	return 0
}

check_allgs() {
	_c=$(num "$1" '; ([0-9]+) lists read short')
	if [ "${_c:-0}" -gt 0 ]; then pass "$1/allgs-read-short"; else fail "$1/allgs-read-short" "not counted: '$_c'"; fi
	# (a launched target's first snapshot may come before its runtime made the list)
	_u=$(num "$1" 'snapshots found no list of goroutines \(runtime.allgs not readable\), ([0-9.]+) s in no sample')
	if [ -n "$_u" ] && awk -v u="$_u" 'BEGIN { exit !(u < 0.2) }'; then
		pass "$1/allgs-read"
	else
		fail "$1/allgs-read" "'$_u' s without the goroutines"
	fi
}
check_stack() {
	if has "$1" wall main.victimHuge; then pass "$1/stack-huge-walked"; else fail "$1/stack-huge-walked" "no wall sample of main.victimHuge"; fi
}
check_reason() {
	gotool tool pprof -tags -sample_index=wall -focus=main.victimReason "$T/$1.pb.gz" >"$T/$1.rtags" 2>/dev/null
	if grep -q 'unknown (255)' "$T/$1.rtags" && ! grep -q preempted "$T/$1.rtags"; then
		pass "$1/reason-unknown"
	else
		fail "$1/reason-unknown" "main.victimReason's wait reasons: $(grep -A3 wait_reason "$T/$1.rtags" | tr -s ' \n' ' ')"
	fi
	_c=$(num "$1" '; ([0-9]+) goroutine samples with a wait reason none')
	if [ "${_c:-0}" -gt 0 ]; then pass "$1/reason-counted"; else fail "$1/reason-counted" "'$_c'"; fi
}
check_buckets() {
	_r=$(num "$1" 'process [0-9]+: [0-9]+ heap records of the Go runtime \(runtime.mbuckets\), ([0-9]+) read')
	if [ "${_r:-0}" -gt 0 ]; then pass "$1/buckets-read"; else fail "$1/buckets-read" "'$_r' heap records read"; fi
	_c=$(num "$1" ', ([0-9]+) found the records. list a cycle')
	if [ "${_c:-0}" -gt 0 ]; then pass "$1/buckets-cycle-counted"; else fail "$1/buckets-cycle-counted" "'$_c'"; fi
	if has "$1" inuse_space main.allocBig; then pass "$1/inuse-allocbig"; else fail "$1/inuse-allocbig" "no live heap of main.allocBig"; fi
}
check_labels() {
	gotool tool pprof -tags -sample_index=cpu -focus=main.labeled "$T/$1.pb.gz" >"$T/$1.ltags" 2>/dev/null
	if grep -q '^ *big:' "$T/$1.ltags"; then pass "$1/labels-kept"; else fail "$1/labels-kept" "no label big on main.labeled"; fi
	_c=$(num "$1" 'goroutines: ([0-9]+) of [0-9]+ label sets read cut')
	if [ "${_c:-0}" -gt 0 ]; then pass "$1/labels-cut-counted"; else fail "$1/labels-cut-counted" "'$_c'"; fi
	_sz=$(wc -c <"$T/$1.pb.gz")
	if [ "$_sz" -lt 4000000 ]; then pass "$1/labels-size"; else fail "$1/labels-size" "profile $_sz bytes"; fi
}

t_run=$(awk -v s="$SECS" 'BEGIN { print s + 1 }')
if [ -z "$SAN" ]; then
	for m in allgs stack reason labels; do
		run "$m" "$m"
		common "$m" "$t_run" && "check_$m" "$m"
	done
	run buckets-p buckets -p
	common buckets-p 2 && check_buckets buckets-p
fi
run all all
common all "$t_run" && { check_allgs all; check_stack all; check_reason all; check_labels all; }
run all-p all -p
common all-p 2 && { check_allgs all-p; check_reason all-p; check_buckets all-p; }
