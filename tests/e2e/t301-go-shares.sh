#!/bin/sh
# Known answer: tests/go/shares burns CPU in main.burn1..4 in proportion
# 1:2:3:4.  On the normal and the stripped build: each self share within
# +-3 points of 10/20/30/40 %, >= 99 % of samples with a complete stack
# (rooted in runtime.goexit, or through main.main), file:line from
# gopclntab, and both builds give the same function names.
. "$(dirname "$0")/lib.sh"
need_perf
need_file shares "$GOFIX/shares" "$GOFIX/shares-stripped"
src=$top/tests/go/shares/main.go

for b in shares shares-stripped; do
	p=$T/$b.pb.gz
	"$PMUPROF" record -e cpu-clock -F 2000 -o "$p" -- "$GOFIX/$b" 2>"$T/$b.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$b-record" "exit $rc: $(head -2 "$T/$b.err" | tr '\n' '|')"
		continue
	fi
	pass "$b-record"
	"$PMUPROF" report -i "$p" --folded >"$T/$b.folded"
	"$PMUPROF" report -i "$p" --top 10 >"$T/$b.table"
	total=$(folded_total "$T/$b.folded")
	# about 3.5 s of CPU at 2000 Hz: ~7000 samples
	if [ "$total" -ge 3500 ]; then pass "$b-samples"; else fail "$b-samples" "$total samples"; fi
	got=""
	for i in 1 2 3 4; do
		s=$(share "$T/$b.folded" main.burn$i)
		got="$got burn$i=$s%"
		if awk -v s="$s" -v w=$((i * 10)) 'BEGIN { d = s - w; exit !(d <= 3 && d >= -3) }'; then
			pass "$b-burn$i-share"
		else
			fail "$b-burn$i-share" "main.burn$i self $s %, expected $((i * 10)) +- 3"
		fi
	done
	echo "# $b: $total samples,$got"
	c=$(complete_pct "$T/$b.folded")
	echo "# $b: complete stacks $c %"
	if awk -v c="$c" 'BEGIN { exit !(c >= 99) }'; then
		pass "$b-complete-stacks"
	else
		fail "$b-complete-stacks" "$c % complete; worst: $(awk '{ print $NF, $0 }' "$T/$b.folded" | sort -rn | grep -v -e '^[0-9]* runtime\.goexit;' -e ';main\.main;' -e ' main\.main;' | head -2 | cut -d' ' -f2- | tr '\n' '|')"
	fi
	# the worker goroutines' stacks: goexit -> main.main.funcN -> main.burnN
	if grep -Eq '^runtime\.goexit;main\.main\.func[0-9]+;main\.burn4 [0-9]+$' "$T/$b.folded"; then
		pass "$b-burn4-stack"
	else
		fail "$b-burn4-stack" "$(grep 'main.burn4 ' "$T/$b.folded" | sort -t' ' -k2 -rn | head -2 | tr '\n' '|')"
	fi
	# table: the top four rows are burn4..burn1, with their file and start line
	if [ "$(table_funcs "$T/$b.table" 4 | tr '\n' ' ')" = "main.burn4 main.burn3 main.burn2 main.burn1 " ]; then
		pass "$b-table-order"
	else
		fail "$b-table-order" "$(table_funcs "$T/$b.table" 4 | tr '\n' ' ')"
	fi
	line=$(grep -n '^func burn4' "$src" | cut -d: -f1)
	# Go 1.19 records no start line (gopclntab has it from 1.20, its DWARF has no
	# decl_line): the file must be right and no line may be made up; a start line,
	# when there is one, must be the func line.
	if grep -Eq "main\.burn4 +[^ ]*tests/go/shares/main\.go(:$line)?$" "$T/$b.table"; then
		pass "$b-file-line"
	else
		fail "$b-file-line" "want main.go:$line: $(grep 'main.burn4' "$T/$b.table")"
	fi
	leaf_names "$T/$b.folded" 1 >"$T/$b.leaves"
done

if [ -s "$T/shares.leaves" ] && [ -s "$T/shares-stripped.leaves" ]; then
	if cmp -s "$T/shares.leaves" "$T/shares-stripped.leaves"; then
		pass same-names-stripped
	else
		fail same-names-stripped "$(diff "$T/shares.leaves" "$T/shares-stripped.leaves" | grep '^[<>]' | tr '\n' ' ')"
	fi
	# and the same set of every frame name in stacks above 1 %
	for b in shares shares-stripped; do
		awk '{ n = $NF; t += n; l[NR] = $0; c[NR] = n } END { for (i = 1; i <= NR; i++) if (100 * c[i] / t > 1) {
			s = l[i]; sub(/ [0-9]+$/, "", s); k = split(s, fr, ";"); for (j = 1; j <= k; j++) print fr[j] } }' \
			"$T/$b.folded" | LC_ALL=C sort -u >"$T/$b.frames"
	done
	if cmp -s "$T/shares.frames" "$T/shares-stripped.frames"; then
		pass same-frames-stripped
	else
		fail same-frames-stripped "$(diff "$T/shares.frames" "$T/shares-stripped.frames" | grep '^[<>]' | tr '\n' ' ')"
	fi
else
	fail same-names-stripped "a build gave no profile"
fi
