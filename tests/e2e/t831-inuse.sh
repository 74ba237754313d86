#!/bin/sh
# The live heap from outside (record --inuse, issue 20) on tests/go/alloc:
# the fixture keeps every 7th object of main.small (48 B), main.page
# (4 KiB) and main.big (64 KiB) alive to the end and prints that truth
# ("kept FUNC OBJECTS BYTES"), then after a runtime.GC() writes its own
# heap profile (runtime/pprof, -heap) and waits, allocating nothing
# (-hold).  Go 1.26, 1.19 and 1.27 builds, stripped; launched and
# attached (the attached one read at the end, the target not stopped:
# pmuprof gets SIGINT once the fixture said "profiles written").
# Checks:
#   - per stack (function names, leaf to root), inuse_space, inuse_objects,
#     alloc_space and alloc_objects equal to the program's own heap
#     profile, exactly: both are the same runtime records (published as
#     of the last GC cycle, which the fixture's runtime.GC() ended and no
#     cycle follows while it waits), with the runtime's frames hidden
#     and the values scaled the same way -- at MemProfileRate 1 (every
#     allocation) and at the default 512 KiB (Go 1.26: scaled estimates,
#     the same arithmetic on the same counts);
#   - at rate 1, the in-use objects of each function at its object size
#     (the label bytes) equal to the fixture's kept truth;
#   - go tool pprof -sample_index=inuse_space reads the profile;
#   - with --alloc in the same recording (Go 1.26, paced: no sample
#     lost): alloc_* are the probe's (the recording's), inuse_* still the
#     program's per stack, and the allocations at 64 KiB
#     (-tagfocus=bytes=65536: the label bytes on --alloc's samples) are
#     main.big's, as many as the program counts; in-use objects under a
#     tenant label only where every allocation of the record was seen
#     under it: main.page's all under tenant a or all under [labels
#     unknown] (b never), main.big's so under b, main.small's (one record
#     for both tenants' allocations) all under [labels unknown];
#   - a binary with heap sampling off (tests/go/allocoff): one line says
#     so;
#   - with --raw (launched, Go 1.26; no events: the capture's attr a
#     placeholder): the same checks on the live profile, and `report -i`
#     of the capture gives it again (text report, folded stacks and totals
#     of the four sample types), the read at the end included; with
#     --alloc too, the same.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
need_file alloc "$FIX/go126/alloc-stripped" "$FIX/go126/allocoff-stripped"
need_cmd go "$GO"

ARGS="-n 10000 -keep 7 -heap"

# stacks PB INDEX: "VALUE STACK" per stack (function names leaf first, ';'-joined), summed, nonzero
stacks() {
	gotool tool pprof -traces -unit=B -sample_index=$2 "$1" 2>/dev/null |
		awk '/^-----/ { if (k != "") s[k] += v; k = ""; inb = 1; got = 0; next }
			!inb { next }
			!got && $1 ~ /^[0-9.]+B?$/ && NF >= 2 { v = $1; sub(/B$/, "", v); got = 1; k = $2; next }
			got && /^ +\[labels unknown\]$/ { next }
			got { sub(/^ +/, ""); sub(/ \(inline\)$/, ""); k = k ";" $0 }
			END { if (k != "") s[k] += v; for (x in s) if (s[x] != 0) print s[x], x }' | sort -k2
}

# same NAME PB GOPROF INDEXES...: per stack, pmuprof's values equal the program's
same() {
	n=$1 pb=$2 gp=$3
	shift 3
	for si in "$@"; do
		stacks "$pb" $si >"$T/$n.pm.$si"
		stacks "$gp" $si >"$T/$n.go.$si"
		nd=$(diff "$T/$n.pm.$si" "$T/$n.go.$si" | grep -c '^[<>]')
		echo "# $n: $si: $(wc -l <"$T/$n.pm.$si") stacks in pmuprof's, $(wc -l <"$T/$n.go.$si") in the program's, $nd lines differ"
		if [ "$nd" = 0 ] && [ -s "$T/$n.go.$si" ] && grep -q 'main\.big;main\.work' "$T/$n.go.$si"; then
			pass "$n-$si"
		else
			fail "$n-$si" "$(diff "$T/$n.pm.$si" "$T/$n.go.$si" | head -4 | tr '\n' '|')"
		fi
	done
}

# kept NAME PB OUT: in-use objects of each function at its size, against the fixture's kept truth
kept() {
	n=$1 pb=$2 out=$3 r=
	for fs in small:48 page:4096 big:65536; do
		f=${fs%:*} sz=${fs#*:}
		v=$(gotool tool pprof -top -sample_index=inuse_objects -tagfocus=bytes=${sz}B "$pb" 2>/dev/null |
			awk -v f=main.$f '$NF == f { print $1 }')
		t=$(awk -v f=main.$f '$1 == "kept" && $2 == f { s += $4 } END { print s + 0 }' "$out")
		r="$r main.$f ${v:-0}/$t"
		[ "${v:-0}" = "$t" ] || bad=1
	done
	echo "# $n: in-use objects pmuprof/kept:$r"
	if [ -z "${bad:-}" ]; then pass "$n-kept"; else fail "$n-kept" "$r"; fi
	bad=
}

for b in go126 go go127; do
	d=$FIX/$b
	if [ ! -x "$d/alloc-stripped" ]; then
		skip "$b" "no $d/alloc-stripped (scripts/fixtures.sh builds it when the toolchain is there)"
		continue
	fi
	# launched, stripped: the last read before it exits
	n=$b-launch
	"$PMUPROF" record --inuse -o "$T/$n.pb.gz" -- "$d/alloc-stripped" $ARGS "$T/$n.go.pb.gz" -hold 400ms >"$T/$n.out" 2>"$T/$n.err"
	same $n "$T/$n.pb.gz" "$T/$n.go.pb.gz" inuse_space inuse_objects alloc_space alloc_objects
	kept $n "$T/$n.pb.gz" "$T/$n.out"
	# attached, stripped: read at the end, the target running
	n=$b-attach
	"$d/alloc-stripped" $ARGS "$T/$n.go.pb.gz" -usr1 -hold 5s >"$T/$n.out" 2>&1 &
	p=$!
	sleep 0.2
	"$PMUPROF" record --inuse -p $p -o "$T/$n.pb.gz" 2>"$T/$n.err" &
	r=$!
	i=0
	while ! grep -qs 'attached to PID' "$T/$n.err" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	kill -USR1 $p
	i=0
	while ! grep -qs 'profiles written' "$T/$n.out" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	kill -INT $r
	wait $r
	kill $p 2>/dev/null
	wait $p 2>/dev/null
	same $n "$T/$n.pb.gz" "$T/$n.go.pb.gz" inuse_space inuse_objects
	if gotool tool pprof -raw "$T/$n.pb.gz" 2>/dev/null | grep -q 'inuse: process .* read at the end'; then
		pass "$n-at-end"
	else
		fail "$n-at-end" "$(gotool tool pprof -raw "$T/$n.pb.gz" 2>&1 | grep 'inuse:' | head -2 | tr '\n' '|')"
	fi
done

# the runtime's default rate: the same records scaled the same way
n=default-rate
"$PMUPROF" record --inuse -o "$T/$n.pb.gz" -- "$FIX/go126/alloc-stripped" -rate 0 $ARGS "$T/$n.go.pb.gz" -hold 400ms >"$T/$n.out" 2>"$T/$n.err"
same $n "$T/$n.pb.gz" "$T/$n.go.pb.gz" inuse_space alloc_space

# go tool pprof reads it, inuse_space by default (as Go's heap profile)
n=go126-launch
top=$(gotool tool pprof -top -sample_index=inuse_space "$T/$n.pb.gz" 2>&1)
dflt=$(gotool tool pprof -top "$T/$n.pb.gz" 2>/dev/null | sed -n 's/^Type: //p')
if echo "$top" | grep -q 'main\.big$' && [ "$dflt" = inuse_space ]; then
	pass gotool-pprof
else
	fail gotool-pprof "default type '$dflt': $(echo "$top" | head -3 | tr '\n' '|')"
fi

# with --alloc: the probe's alloc_*, the records' inuse_*, the label bytes on --alloc's samples;
# a record's in-use objects under the labels of its allocations only where the probe saw every
# one of them under the same goroutine part, else under [labels unknown]: never a wrong tenant
# tenants PB FUNC SIZE: "ALL A B", in-use objects of FUNC at SIZE: all, under tenant a, b
tenants() {
	gotool tool pprof -tags -sample_index=inuse_objects -tagfocus=bytes=$3B -focus="^$2\$" "$1" 2>/dev/null |
		awk '/^ *[a-z_]+: Total/ { key = $1; sub(/:$/, "", key); if (key == "bytes") all = $3; next }
			key == "tenant" && NF >= 4 { t[$NF] += $1 }
			END { printf "%d %d %d\n", all, t["a"], t["b"] }'
}
need_tracefs
n=alloc-inuse
"$PMUPROF" record --alloc --inuse -o "$T/$n.pb.gz" -- "$FIX/go126/alloc-stripped" -n 300 -pace 1 -keep 7 -heap "$T/$n.go.pb.gz" -hold 400ms >"$T/$n.out" 2>"$T/$n.err"
if grep -q 'alloc: cannot watch' "$T/$n.err"; then
	skip "$n" "$(head -1 "$T/$n.err")"
else
	same $n "$T/$n.pb.gz" "$T/$n.go.pb.gz" inuse_space inuse_objects
	for f in "$T/$n.pb.gz" "$T/$n.go.pb.gz"; do
		gotool tool pprof -top -sample_index=alloc_objects -tagfocus=bytes=65536B "$f" 2>/dev/null |
			awk '$NF == "main.big" { print $NF, $1 }'
	done >"$T/$n.big"
	echo "# $n: alloc_objects at 64 KiB, pmuprof / the program's: $(tr '\n' '/' <"$T/$n.big")"
	if [ "$(sed -n 1p "$T/$n.big")" = "main.big 30" ] && [ "$(sed -n 2p "$T/$n.big")" = "main.big 30" ] &&
		gotool tool pprof -raw "$T/$n.pb.gz" 2>/dev/null | grep -q "alloc_\* are --alloc's"; then
		pass "$n-bytes-label"
	else
		fail "$n-bytes-label" "$(tr '\n' '|' <"$T/$n.big")"
	fi
	# main.page: tenant a's alone, main.big: b's alone, main.small: both (one record: unknown)
	r='' bad=''
	for x in page:4096:a big:65536:b small:48:-; do
		f=main.${x%%:*} y=${x#*:} sz=${y%%:*} ten=${x##*:}
		set -- $(tenants "$T/$n.pb.gz" $f $sz)
		k=$(awk -v f=$f '$1 == "kept" && $2 == f { s += $4 } END { print s + 0 }' "$T/$n.out")
		r="$r $f all/a/b $1/$2/$3 kept $k;"
		case $ten in
		a) [ "$1" = "$k" ] && [ "$3" = 0 ] && { [ "$2" = "$k" ] || [ "$2" = 0 ]; } || bad=1 ;;
		b) [ "$1" = "$k" ] && [ "$2" = 0 ] && { [ "$3" = "$k" ] || [ "$3" = 0 ]; } || bad=1 ;;
		-) [ "$1" = "$k" ] && [ "$2" = 0 ] && [ "$3" = 0 ] || bad=1 ;;
		esac
	done
	echo "# $n: in-use objects by tenant:$r"
	if [ -z "$bad" ]; then pass "$n-labels"; else fail "$n-labels" "$r"; fi
fi

# heap sampling off: one line says it
n=off
"$PMUPROF" record --inuse -o "$T/$n.pb.gz" -- "$FIX/go126/allocoff-stripped" -n 2000 -delay 300ms >"$T/$n.out" 2>"$T/$n.err"
if [ "$(grep -c 'heap sampling off' "$T/$n.err")" = 1 ] && [ "$(grep -c 'inuse:' "$T/$n.err")" = 1 ]; then
	pass "$n"
else
	fail "$n" "$(head -3 "$T/$n.err" | tr '\n' '|')"
fi

# --raw: the heap records' reads in the capture, replayed to the live profile
n=go126-raw
"$PMUPROF" record --inuse --raw "$T/$n.data" -o "$T/$n.pb.gz" -- "$FIX/go126/alloc-stripped" $ARGS "$T/$n.go.pb.gz" -hold 400ms >"$T/$n.out" 2>"$T/$n.err"
same $n "$T/$n.pb.gz" "$T/$n.go.pb.gz" inuse_space inuse_objects alloc_space alloc_objects
replay_equiv $n "$T/$n.pb.gz" "$T/$n.data" inuse_space inuse_objects alloc_space alloc_objects
if [ -z "$SAN" ] && ! grep -q 'alloc: cannot watch' "$T/alloc-inuse.err" 2>/dev/null; then
	n=alloc-inuse-raw
	"$PMUPROF" record --alloc --inuse --raw "$T/$n.data" -o "$T/$n.pb.gz" -- "$FIX/go126/alloc-stripped" -n 300 -pace 1 -keep 7 -heap "$T/$n.go.pb.gz" -hold 400ms >"$T/$n.out" 2>"$T/$n.err"
	same $n "$T/$n.pb.gz" "$T/$n.go.pb.gz" inuse_space inuse_objects
	replay_equiv $n "$T/$n.pb.gz" "$T/$n.data" inuse_space inuse_objects alloc_space alloc_objects
fi
exit 0
