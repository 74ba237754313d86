#!/bin/sh
# Allocations from outside (record --alloc, issue 20) on tests/go/alloc:
# known sizes at known stacks under the labels tenant=a/b, by two workers
# started through one helper (main.spawn) from two call sites (main.siteA,
# main.siteB); the fixture sets runtime.MemProfileRate itself and prints
# its truth ("truth FUNC TENANT CREATOR OBJECTS BYTES"), and writes its own
# allocs profile at the end.  Go 1.26, 1.19 and 1.27 builds; launched
# (stripped) and attached.  Checks, at rate 1 (every allocation sampled):
#   - no sample lost (the fixture paces itself: a millisecond's sleep a round);
#   - objects per function (main.small, main.page, main.big, self) equal
#     to the program's own profile, exactly (the same runtime sampling
#     events), and to its truth: at least it, at most 5 % + 5 above it (the
#     runtime's own allocations while in the function, e.g. a GC starting,
#     are under it in both profiles, as runtime/pprof hides the runtime's
#     frames above the allocating function);
#   - alloc_space shares by function, by tenant label and by creator within
#     3 pp of the truth's, and at most 3 % of the bytes with the goroutine
#     unknown; a --raw capture replayed gives
#     the same profile (Go 1.26);
# at the runtime's default rate (512 KiB): per-function alloc_space and
# alloc_objects within 2 % of the program's own profile (the same sampled
# allocations, scaled the same way: 1 / (1 - exp(-size/rate))); and a
# binary without runtime/pprof (tests/go/allocoff): the one line that says
# its heap sampling is off, and no allocation of the program sampled;
# --memprofilerate 4096 attached to it: its allocations sampled (the
# estimate within 6 % of the truth), the rate put back at the end, said on
# stderr (launched: t832).
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
need_perf
need_file alloc "$FIX/go126/alloc" "$GOFIX/alloc-stripped" "$FIX/go126/allocoff-stripped"
need_cmd go "$GO"
need_tracefs

ARGS="-n 500 -pace 1 -delay 300ms -linger 200ms"

# rows PB: "FUNC TENANT CREATOR OBJECTS BYTES" per sample of the three functions
# (TENANT - and CREATOR - when none, ? when the goroutine is unknown)
rows() {
	for si in alloc_objects alloc_space; do
		gotool tool pprof -traces -unit=B -sample_index=$si "$1" 2>/dev/null |
			awk -v si=$si '/^-----/ { if (leaf ~ /^main\.(small|page|big)$/) print leaf, ten, cr, v; leaf = ""; ten = "-"; cr = "-"; next }
				/^ *tenant:/ { ten = $2 } /main\.site[AB] \[creator\]/ && cr == "-" { cr = $1 } /goroutine unknown/ { ten = "?"; cr = "?" }
				leaf == "" && $1 ~ /^[0-9.]+B?$/ && NF >= 2 { v = $1; sub(/B$/, "", v); leaf = $2 }
				END { if (leaf ~ /^main\.(small|page|big)$/) print leaf, ten, cr, v }' >"$T/rows.$si"
	done
}
# sum FILE KEYCOL: value per key
sum() { awk -v k="$2" '{ s[$k] += $4 } END { for (x in s) print x, s[x] }' "$1" | LC_ALL=C sort; }

# judge NAME PB OUT GOPROF
judge() {
	n=$1 pb=$2 out=$3 gp=$4
	lost=$(sed -n 's/.*samples (\([0-9]*\) lost).*/\1/p' "$T/$n.err")
	rows "$pb"
	# objects per function: pmuprof, the program's own, the truth
	sum "$T/rows.alloc_objects" 1 >"$T/$n.obj"
	gotool tool pprof -top -sample_index=alloc_objects "$gp" 2>/dev/null |
		awk '$NF ~ /^main\.(small|page|big)$/ { print $NF, $1 }' | LC_ALL=C sort >"$T/$n.gobj"
	awk '/^truth/ { o[$2] += $5 } END { for (f in o) print f, o[f] }' "$out" | LC_ALL=C sort >"$T/$n.tobj"
	echo "# $n: objects pmuprof / own profile / truth: $(join "$T/$n.obj" "$T/$n.gobj" | join - "$T/$n.tobj" | tr '\n' ',') lost ${lost:-?}"
	if [ "${lost:-1}" = 0 ] && [ "$(wc -l <"$T/$n.tobj")" = 3 ] && cmp -s "$T/$n.obj" "$T/$n.gobj" &&
		join "$T/$n.obj" "$T/$n.tobj" | awk '{ if ($2 < $3 || $2 > $3 * 1.05 + 5) bad = 1 } END { exit bad || NR != 3 }'; then
		pass "$n-objects"
	else
		fail "$n-objects" "pmuprof $(tr '\n' ' ' <"$T/$n.obj") own $(tr '\n' ' ' <"$T/$n.gobj") truth $(tr '\n' ' ' <"$T/$n.tobj") lost $lost"
	fi
	# alloc_space shares: by function (col 1), tenant (2), creator (3), against the truth's
	for c in 1 2 3; do
		sum "$T/rows.alloc_space" $c | awk '$1 != "?" && $1 != "-"' >"$T/$n.s$c"
		awk -v c=$c '/^truth/ { k = c == 1 ? $2 : c == 2 ? $3 : $4; b[k] += $6 } END { for (x in b) print x, b[x] }' "$out" |
			LC_ALL=C sort >"$T/$n.t$c"
		r=$(join -a 2 -e 0 -o 0,1.2,2.2 "$T/$n.s$c" "$T/$n.t$c" |
			awk '{ k[NR] = $1; s[NR] = $2; t[NR] = $3; ss += $2; tt += $3 }
				END { for (i = 1; i <= NR; i++) { d = 100 * s[i] / ss - 100 * t[i] / tt; printf "%s %.1f/%.1f ", k[i], 100 * s[i] / ss, 100 * t[i] / tt; if (d > 3 || d < -3) bad = 1 }
					if (ss == 0 || NR < 2) bad = 1; print bad ? "BAD" : "ok" }')
		echo "# $n: alloc_space % by $(echo x function tenant creator | cut -d' ' -f$((c + 1))), pmuprof/truth: $r"
		case $r in *ok) pass "$n-space-$c" ;; *) fail "$n-space-$c" "$r" ;; esac
	done
	u=$(awk '{ t += $4; if ($2 == "?") u += $4 } END { printf "%.1f", t ? 100 * u / t : 100 }' "$T/rows.alloc_space")
	max=3
	echo "# $n: $u % of the bytes with the goroutine unknown (at most $max)"
	if awk -v u="$u" -v m=$max 'BEGIN { exit !(u <= m) }'; then pass "$n-goroutines"; else fail "$n-goroutines" "$u % unknown"; fi
}

builds="go126 go go127"
if [ -n "$SAN" ]; then # the same code on every version: one
	builds=go126
	echo "# ASan pass: Go 1.26 only (1.19 and 1.27 in the normal pass)"
fi
for b in $builds; do
	d=$FIX/$b
	if [ ! -x "$d/alloc" ]; then
		skip "$b" "no $d/alloc (scripts/fixtures.sh builds it when the toolchain is there)"
		continue
	fi
	# launched, stripped
	n=$b-launch
	raw=
	[ $b = go126 ] && raw="--raw $T/$n.data"
	"$PMUPROF" record --alloc --creators $raw -o "$T/$n.pb.gz" -- "$d/alloc-stripped" $ARGS -prof "$T/$n.go.pb.gz" >"$T/$n.out" 2>"$T/$n.err"
	judge $n "$T/$n.pb.gz" "$T/$n.out" "$T/$n.go.pb.gz"
	if [ -n "$raw" ]; then # the capture replayed: the same samples, stacks, labels and creators
		"$PMUPROF" report -i "$T/$n.data" --pprof "$T/$n.replay.pb.gz" >/dev/null 2>"$T/$n.rerr"
		for f in pb.gz replay.pb.gz; do
			gotool tool pprof -traces -sample_index=alloc_space "$T/$n.$f" 2>/dev/null | grep -v '^ *\(File\|Type\|Time\|Duration\|Build ID\):' >"$T/$n.$f.traces"
		done
		if [ -s "$T/$n.pb.gz.traces" ] && cmp -s "$T/$n.pb.gz.traces" "$T/$n.replay.pb.gz.traces"; then
			pass "$n-replay"
		else
			fail "$n-replay" "$(diff "$T/$n.pb.gz.traces" "$T/$n.replay.pb.gz.traces" | head -5 | tr '\n' '|') $(head -2 "$T/$n.rerr")"
		fi
	fi
	# attached: the fixture starts its work on SIGUSR1, sent once pmuprof is
	# attached and has taken a few of its idle allocations (the workers are then
	# made with the creation probe on; see the goroutines check)
	n=$b-attach
	"$d/alloc" -n 500 -pace 1 -usr1 -linger 200ms -prof "$T/$n.go.pb.gz" >"$T/$n.out" 2>&1 &
	p=$!
	sleep 0.2
	"$PMUPROF" record --alloc --creators -p $p -o "$T/$n.pb.gz" 2>"$T/$n.err" &
	r=$!
	i=0
	while ! grep -q 'attached to PID' "$T/$n.err" && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 0.3
	kill -USR1 $p
	wait $p
	wait $r
	judge $n "$T/$n.pb.gz" "$T/$n.out" "$T/$n.go.pb.gz"
done

# the runtime's default rate: scaled as the runtime scales, against its own profile
n=default-rate
"$PMUPROF" record --alloc -o "$T/$n.pb.gz" -- "$FIX/go126/alloc" -rate 0 -n 20000 -prof "$T/$n.go.pb.gz" >"$T/$n.out" 2>"$T/$n.err"
for si in alloc_space alloc_objects; do
	for f in "$T/$n.pb.gz" "$T/$n.go.pb.gz"; do
		gotool tool pprof -top -unit=B -sample_index=$si "$f" 2>/dev/null |
			awk '$NF ~ /^main\.(page|big)$/ { v = $1; sub(/B$/, "", v); print $NF, v }' | LC_ALL=C sort
	done | awk '{ v[$1, ++c[$1]] = $2 } END { for (f in c) printf "%s %s %s ", f, v[f, 1], v[f, 2] }' >"$T/$n.$si"
	r=$(cat "$T/$n.$si")
	echo "# $n: $si pmuprof/own profile: $r"
	if awk -v r="$r" 'BEGIN { k = split(r, a, " "); if (k != 6) exit 1
		for (i = 1; i <= k; i += 3) { d = a[i + 1] - a[i + 2]; if (a[i + 2] <= 0 || d > 0.02 * a[i + 2] || -d > 0.02 * a[i + 2]) exit 1 } }'; then
		pass "$n-$si"
	else
		fail "$n-$si" "$r"
	fi
done

# a program that never uses the heap profile: one line says it, nothing sampled
for b in $builds; do
	[ -x "$FIX/$b/allocoff-stripped" ] || continue
	n=$b-off
	"$PMUPROF" record --alloc -o "$T/$n.pb.gz" -- "$FIX/$b/allocoff-stripped" -n 20000 >"$T/$n.out" 2>"$T/$n.err"
	# (the runtime samples until schedinit turns it off: a few allocations of its start)
	s=$("$PMUPROF" report -i "$T/$n.pb.gz" --folded 2>/dev/null | grep -c 'main\.')
	if [ "$(grep -c 'heap sampling off' "$T/$n.err")" = 1 ] && [ "$(grep -c 'alloc:' "$T/$n.err")" = 1 ] && [ "${s:-1}" = 0 ]; then
		pass "$n"
	else
		fail "$n" "$s stacks in main: $(head -3 "$T/$n.err" | tr '\n' '|')"
	fi
done
# --memprofilerate: the rate written in an attached program that had it off, put back at the end
mbuilds="go126 go"
[ -n "$SAN" ] && mbuilds=go126
for b in $mbuilds; do
	n=$b-memprofilerate
	"$FIX/$b/allocoff-stripped" -n 5000 -pace 5 -delay 1s -wait >"$T/$n.out" 2>&1 &
	p=$!
	sleep 0.3
	"$PMUPROF" record --memprofilerate 4096 -p $p --duration 4 -o "$T/$n.pb.gz" 2>"$T/$n.err"
	kill -USR1 $p
	wait $p
	lost=$(sed -n 's/.*samples (\([0-9]*\) lost).*/\1/p' "$T/$n.err")
	est=$(gotool tool pprof -top -unit=B -sample_index=alloc_space "$T/$n.pb.gz" 2>/dev/null | awk '$NF == "main.page" { v = $1; sub(/B$/, "", v); print v }')
	rate=$(sed -n 's/^rate //p' "$T/$n.out")
	# 5000 x 4 KiB at 4 KiB: each object sampled with p = 1 - 1/e, 3 160 samples: 1.1 % sd
	echo "# $n: main.page alloc_space $est (truth 20480000), rate after $rate, lost $lost"
	if [ "$(grep -c 'memprofilerate: runtime.MemProfileRate of process .* set to 4096 (it was 0)' "$T/$n.err")" = 1 ] &&
		[ "$rate" = 0 ] && [ "${lost:-1}" = 0 ] && awk -v e="${est:-0}" 'BEGIN { d = e / 20480000 - 1; exit !(d < 0.06 && d > -0.06) }'; then
		pass "$n"
	else
		fail "$n" "estimate ${est:-none} of 20480000, rate after ${rate:-?}, lost ${lost:-?}: $(head -2 "$T/$n.err" | tr '\n' '|')"
	fi
done
exit 0
