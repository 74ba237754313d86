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
#            read stops at 4 KB), main.victimLow's dropped, counted as "bad
#            stack bounds" (attached: launched, it was walked before)
#   buckets  attached after the cycle was made (launched, pmuprof walked
#            the list before): heap records read, the cycle counted
#   reason   main.victimReason's wait_reason "unknown (255)", never
#            "preempted" (255 was that marker), counted
#   labels   main.labeled's samples keep 16 of its labels, "big" (cut to 512
#            bytes) among them, the cut counted ("label sets read cut"); Go
#            1.19 keeps labels in a map: the 16 are its first in map order
#
# The bounds, stated (measured with Go 1.26 on a 2-core VM, normal build:
# max RSS 17-24 MB, 3.4-5.3 s for 3 s corrupted; the inuse read of the
# cycle took 1175 ms of CPU and 50 MB before its fix):
#   max RSS of pmuprof    < 200 MB  (RSS_MAX_KB)
#   its wall time         < the target's run + 10 s (a hang: timeout 60 s)
#   one --inuse read      < 250 ms of CPU ("at most N ms a read")
# The one-mode runs use the fixture built with Go 1.26; the `all` cases
# (launched and attached) run on each Go the fixtures were built with,
# 1.26, 1.19 (go119-*) and 1.27 (go127-*): the runtime's structures it
# corrupts are found by the fixture from its own symbols and DWARF on each.
# Under ASan ($SAN) only the `all` cases run: the one-mode runs repeat their
# code paths.
. "$(dirname "$0")/lib.sh"

need_perf
need_tracefs
need_file hostile "$FIX/go126/hostile"
RSS_MAX_KB=204800
SECS=1.5

# run NAME MODE [-p]: record every kind at once into $T/NAME.*; the
# fixture's output in $T/NAME.fix, pmuprof's in .err, "SECONDS MAXRSS_KB"
# in .time, pmuprof's exit status in .rc.  Attached, the target stays
# corrupted until pmuprof is done (however slow its start, under ASan
# too), then it is ended: every snapshot reads it corrupted.
run() {
	_n=$1 _m=$2 _att=${3:-}
	if [ "$_att" = -p ]; then
		: >"$T/$_n.fix"
		"$HX" -mode "$_m" -secs 60 >"$T/$_n.fix" &
		_fp=$!
		_i=0
		while ! grep -q '^applied\|^symbols missing' "$T/$_n.fix" && [ $_i -lt 100 ]; do
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
	if [ "${_fp:-}" ]; then
		kill "$_fp" 2>/dev/null
		wait "$_fp" 2>/dev/null # (its "Terminated" too)
	fi
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
	# the fixture could not find what it corrupts (its exit 3): nothing to judge
	if grep -q '^symbols missing' "$T/$_n.fix"; then
		skip "$_n" "the fixture ($HX) found no runtime structure to corrupt: $(grep -m1 '^symbols missing' "$T/$_n.fix")"
		return 1
	fi
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
check_stack() { # NAME [-p]: attached, every walk comes after the corruption
	if has "$1" wall main.victimHuge; then pass "$1/stack-huge-walked"; else fail "$1/stack-huge-walked" "no wall sample of main.victimHuge"; fi
	[ "${2:-}" = -p ] || return 0
	_c=$(num "$1" ', ([0-9]+) bad stack bounds')
	if [ "${_c:-0}" -gt 0 ]; then pass "$1/stack-bad-bounds-counted"; else fail "$1/stack-bad-bounds-counted" "'$_c'"; fi
	if has "$1" wall main.victimLow; then fail "$1/stack-low-dropped" "a wall sample of main.victimLow"; else pass "$1/stack-low-dropped"; fi
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
check_labels() { # NAME [map]: map when the runtime keeps labels in a map (Go <= 1.23)
	gotool tool pprof -tags -sample_index=cpu -focus=main.labeled "$T/$1.pb.gz" >"$T/$1.ltags" 2>/dev/null
	# 16 of the 102 kept (PM_GOR_MAX_LABELS): big (its 1 MB value cut), the
	# 1 MB key (cut) and l000..l099
	_k=$(grep -Ec '^ (big|k+|l[0-9]{3}): Total' "$T/$1.ltags")
	if [ "$_k" = 16 ]; then pass "$1/labels-16"; else fail "$1/labels-16" "$_k of its labels on main.labeled"; fi
	if [ "${2:-}" = map ]; then
		skip "$1/labels-kept" "a label map: the 16 read are its first in the map's order, big not always among them"
	elif grep -q '^ *big:' "$T/$1.ltags"; then pass "$1/labels-kept"; else fail "$1/labels-kept" "no label big on main.labeled"; fi
	_c=$(num "$1" 'goroutines: ([0-9]+) of [0-9]+ label sets read cut')
	if [ "${_c:-0}" -gt 0 ]; then pass "$1/labels-cut-counted"; else fail "$1/labels-cut-counted" "'$_c'"; fi
	_sz=$(wc -c <"$T/$1.pb.gz")
	if [ "$_sz" -lt 4000000 ]; then pass "$1/labels-size"; else fail "$1/labels-size" "profile $_sz bytes"; fi
}

t_run=$(awk -v s="$SECS" 'BEGIN { print s + 1 }')
HX=$FIX/go126/hostile
if [ -z "$SAN" ]; then
	for m in allgs stack reason labels; do
		run "$m" "$m"
		common "$m" "$t_run" && "check_$m" "$m"
	done
	run buckets-p buckets -p
	common buckets-p 2 && check_buckets buckets-p
fi
# every kind at once, launched and attached, on each Go (1.26's unprefixed;
# the prefix not in $n: check() sets it)
for v in go126 go119 go127; do
	lab= # Go 1.19's labels are a map
	case $v in
	go126) HX=$FIX/go126/hostile pre= ;;
	go119) HX=$FIX/go/hostile pre=go119- lab=map ;;
	go127) HX=$FIX/go127/hostile pre=go127- ;;
	esac
	if [ ! -x "$HX" ]; then
		skip "${pre}all" "fixture missing: $HX (scripts/fixtures.sh builds it where that Go is found)"
		continue
	fi
	run "${pre}all" all
	common "${pre}all" "$t_run" && { check_allgs "${pre}all"; check_stack "${pre}all"
		check_reason "${pre}all"; check_labels "${pre}all" $lab; }
	run "${pre}all-p" all -p
	common "${pre}all-p" 2 && { check_allgs "${pre}all-p"; check_stack "${pre}all-p" -p
		check_reason "${pre}all-p"; check_buckets "${pre}all-p"; }
done
