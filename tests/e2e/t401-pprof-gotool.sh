#!/bin/sh
# san: no (go tool pprof's time, three versions; pmuprof's writer and reader run under ASan in t201, t402 and the unit tests)
# go tool pprof (Go 1.19, 1.26 and 1.27) reads every kind of profile pmuprof writes, with
# -top and -raw, and agrees with pmuprof report: same top 4 functions by
# flat/self, the same flat% for every function, the same sample totals.
. "$(dirname "$0")/lib.sh"
need_perf
need_file shares "$GOFIX/shares" "$GOFIX/shares-stripped"
[ -x "$GO" ] || { skip all "no Go 1.19 at $GO"; exit 0; }

# The profiles: name:record-args:CMD
while IFS=: read -r name args cmd; do
	"$PMUPROF" record -q -o "$T/$name.pb.gz" $args -- $cmd >/dev/null 2>"$T/$name.err"
	rc=$?
	case $name in sleep-duration) [ $rc -eq 143 ] && rc=0 ;; esac
	if [ $rc -ne 0 ]; then fail "record-$name" "exit $rc: $(head -1 "$T/$name.err")"; fi
	echo "$name" >>"$T/list"
done <<EOF2
shares:-e cpu-clock -F 2000:$GOFIX/shares -scale 0.5
stripped:-e cpu-clock -F 1500:$GOFIX/shares-stripped -scale 0.2
period:-e cpu-clock -c 250000:$GOFIX/shares -scale 0.1
taskclock:-e task-clock:$GOFIX/shares -scale 0.1
faults:-e page-faults -c 1:$GOFIX/shares -scale 0.05
default:-F 999:$GOFIX/shares -scale 0.05
true:-e cpu-clock:/bin/true
sleep-duration:-e cpu-clock --duration 0.2:sleep 5
smallstack:-e cpu-clock --stack-size 512:$GOFIX/shares -scale 0.05
EOF2

# every go tool pprof: Go 1.19's, the Go 1.26 at /usr/local/go, and Go 1.27.3
# (the toolchain scripts/fixtures.sh fetched); the rest of the file uses 1.19's
tools="119:$GO"
for v in 126 127; do # the go command scripts/fixtures.sh built that version's fixtures with
	g=$(cat "$FIX/go$v.go" 2>/dev/null)
	case $("${g:-/nonexistent}" version 2>/dev/null) in
	*" go1.${v#1}"*) tools="$tools $v:$g" ;;
	*) skip "go1.${v#1}" "no Go 1.${v#1} toolchain (scripts/fixtures.sh)" ;;
	esac
done
for tool in $tools; do
ver=${tool%%:*}
# the pprof binary itself (from Go 1.24 the go command builds it on first use
# and looks it up at each `go tool pprof`: 1.4 s a call here), in the cache
# scripts/fixtures.sh filled with the standard library of that version
c=$FIX/gocache-go$ver
[ "$ver" = 119 ] && c=$FIX/gocache
pp=$(GOCACHE=$c GOENV=off "${tool#*:}" tool -n pprof 2>/dev/null)
gotool() { shift 2; GOENV=off "$pp" "$@" </dev/null; }
sfx=
[ "$ver" = 119 ] || sfx=-go1.${ver#1}
while read -r name; do
	f=$T/$name.pb.gz
	if gotool tool pprof -top "$f" >"$T/$name.top" 2>"$T/$name.terr" && grep -q 'flat%' "$T/$name.top"; then
		pass "top-reads-$name$sfx"
	elif [ "$name" = true ] || [ "$name" = sleep-duration ]; then
		# no samples at all is fine, as long as pprof parses the file
		if grep -q 'parsing profile\|unrecognized profile format' "$T/$name.terr"; then
			fail "top-reads-$name$sfx" "$(head -1 "$T/$name.terr")"
		else
			pass "top-reads-$name$sfx"
		fi
	else
		fail "top-reads-$name$sfx" "$(head -2 "$T/$name.terr" | tr '\n' '|')"
	fi
	if gotool tool pprof -raw "$f" >"$T/$name.raw" 2>"$T/$name.rerr" && grep -q '^Samples:' "$T/$name.raw"; then
		pass "raw-reads-$name$sfx"
	else
		fail "raw-reads-$name$sfx" "$(head -2 "$T/$name.rerr" | tr '\n' '|')"
	fi
	# totals: -raw columns vs pmuprof report --folded of each sample type
	awk '/^Samples:/ { s = 1; getline; next } /^Locations/ { s = 0 }
		s && /^ *[0-9]+ +[0-9]+:/ { c += $1; v += $2 } END { printf "%.0f %.0f\n", c, v }' "$T/$name.raw" >"$T/cv"
	read -r gc gv <"$T/cv"
	"$PMUPROF" report -i "$f" --folded --sample-index 0 >"$T/f0"
	"$PMUPROF" report -i "$f" --folded --sample-index 1 >"$T/f1"
	if [ "$(folded_total "$T/f0")" = "$gc" ] && [ "$(folded_total "$T/f1")" = "$gv" ]; then
		pass "totals-$name$sfx"
	else
		fail "totals-$name$sfx" "pprof $gc/$gv, pmuprof $(folded_total "$T/f0")/$(folded_total "$T/f1")"
	fi
done <"$T/list"
done
gotool() { GOCACHE=$FIX/gocache "$GO" "$@"; }

# top 4: go tool pprof -top by flat == pmuprof report by self
gotool tool pprof -top -nodefraction=0 -nodecount=1000 "$T/shares.pb.gz" 2>/dev/null |
	awk '/flat%/ { s = 1; next } s && NF >= 6 { print $6 }' | head -4 | tr '\n' ' ' >"$T/go4"
"$PMUPROF" report -i "$T/shares.pb.gz" >"$T/tab"
table_funcs "$T/tab" 4 | tr '\n' ' ' >"$T/pm4"
echo "# go tool pprof top 4: $(cat "$T/go4")/ pmuprof report top 4: $(cat "$T/pm4")"
# (the same file read by both: the order must be equal; which burn comes first
# depends on the CPU, but the top four are the four burn functions: each
# holds over 5 % of the samples on any CPU, the runtime well under 1 %)
if [ -s "$T/go4" ] && cmp -s "$T/go4" "$T/pm4" &&
	[ "$(tr ' ' '\n' <"$T/go4" | grep . | LC_ALL=C sort | tr '\n' ' ')" = "main.burn1 main.burn2 main.burn3 main.burn4 " ]; then
	pass top4-agree
else
	fail top4-agree "go: $(cat "$T/go4") pmuprof: $(cat "$T/pm4")"
fi
# flat% == Self% for every function with self time (an address no binary
# names, go tool pprof's <unknown>, pmuprof's bare 0x...: a sample of the
# kernel's time in the exec, now counted, before any mapping is known)
gotool tool pprof -top -nodefraction=0 -nodecount=100000 "$T/shares.pb.gz" 2>/dev/null |
	awk '/flat%/ { s = 1; next } s && NF >= 6 { f = $2; sub(/%/, "", f); if (f + 0 > 0 && $6 !~ /^\[/ && $6 != "<unknown>") print $6, f }' | LC_ALL=C sort >"$T/go.flat"
"$PMUPROF" report -i "$T/shares.pb.gz" --top 0 >"$T/all"
table_rows "$T/all" | awk '{ f = $1; sub(/%/, "", f); if (f + 0 > 0 && $4 !~ /^\[/ && $4 !~ /^0x[0-9a-f]+$/) print $4, f }' | LC_ALL=C sort >"$T/pm.flat"
if [ -s "$T/go.flat" ] && [ "$(cut -d' ' -f1 "$T/go.flat")" = "$(cut -d' ' -f1 "$T/pm.flat")" ] &&
	join "$T/go.flat" "$T/pm.flat" | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 0.011) bad = 1 } END { exit bad }'; then
	pass flat-percent-agree
else
	fail flat-percent-agree "$(diff "$T/go.flat" "$T/pm.flat" | grep '^[<>]' | head -4 | tr '\n' ' ')"
fi

# -raw header: sample types, period type, the comment, the binary's mapping
raw=$T/shares.raw
if awk '/^Samples:/ { getline; print; exit }' "$raw" | grep -q '^samples/count cpu/nanoseconds\(\[dflt\]\)\? *$'; then pass raw-types; else fail raw-types "$(grep -A1 '^Samples:' "$raw" | tail -1)"; fi
if grep -q '^PeriodType: cpu nanoseconds' "$raw"; then pass raw-period-type; else fail raw-period-type "$(grep PeriodType "$raw")"; fi
if grep -q "$GOFIX/shares" "$raw" && awk '/^Mappings/ { m = 1; next } m' "$raw" | grep -q "$GOFIX/shares"; then
	pass raw-mapping
else
	fail raw-mapping "no mapping for $GOFIX/shares"
fi
gotool tool pprof -comments "$T/shares.pb.gz" >"$T/comments" 2>/dev/null
if grep -q 'pmuprof record: event cpu-clock, 2000 Hz' "$T/comments"; then pass comments; else fail comments "$(head -3 "$T/comments" | tr '\n' '|')"; fi
if awk '/^Samples:/ { getline; print; exit }' "$T/faults.raw" | grep -q '^samples/count page-faults/count\(\[dflt\]\)\? *$'; then
	pass raw-types-faults
else
	fail raw-types-faults "$(grep -A1 '^Samples:' "$T/faults.raw" | tail -1)"
fi
# pprof's own symbolization must not be needed: every location in the Go
# binary's mapping has a function name
mid=$(awk '/^Mappings/ { m = 1; next } m && index($0, "'"$GOFIX"'/shares") { sub(/:.*/, "", $1); print $1; exit }' "$raw")
awk -v m="M=$mid" '/^Locations/ { l = 1; next } /^Mappings/ { l = 0 } l && /^ +[0-9]+: 0x/ && $3 == m && NF < 4' "$raw" >"$T/unnamed"
if [ -z "$mid" ] || [ -s "$T/unnamed" ]; then
	fail raw-locations-named "mapping '$mid': $(head -3 "$T/unnamed" | tr '\n' '|')"
else
	pass raw-locations-named
fi
