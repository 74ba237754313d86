#!/bin/sh
# Known answer, measured in the same run: tests/go/shares burns CPU in
# main.burn1..4 over 1:2:3:4 units of the same loop body, but the true split
# depends on the CPU (code alignment can make one copy of the loop slower), so
# each build runs under `perf record -e cpu-clock:u` (pmuprof's cpu-clock
# samples user mode only) at the same rate, and the
# same execution's perf samples, named by go tool addr2line, are the truth.
# On the normal and the stripped build, with Go 1.19, 1.26 and 1.27 (the
# fixtures of scripts/fixtures.sh): the sample count and each self share
# agree with perf's within binomial noise, >= 99 % of samples with a complete
# stack (rooted in runtime.goexit, or through main.main), file:line from
# gopclntab, and both builds give the same function names.
. "$(dirname "$0")/lib.sh"
need_perf
need_file shares "$GOFIX/shares" "$GOFIX/shares-stripped"
src=$top/tests/go/shares/main.go

# perf(1) usable here?  (it is the truth for counts and shares; without it
# those checks are skipped, the shape checks still run)
perf_ok=0
if command -v perf >/dev/null 2>&1 && perf record -q -e cpu-clock -o "$T/probe.perf" -- /bin/true >/dev/null 2>&1; then
	perf_ok=1
fi

# perf_leaves NAME COMM BIN: "FUNC COUNT" per function of the perf samples in
# $T/NAME.perf (recorded with -g) taken in threads named COMM.  A sample's
# function is that of its user-mode IP (the first user frame of its
# callchain, as pmuprof too charges time in the kernel to the user code
# below it) when that is in BIN, named by go tool addr2line on BIN (it reads
# gopclntab, so a stripped BIN works); other samples count as "?".
# perf script prints BIN's addresses relative to its mapping: the r-x
# mapping's start - file offset (from the MMAP2 event) makes them addresses.
perf_leaves() {
	perf script -i "$T/$1.perf" --show-mmap-events -F comm,ip,dso 2>/dev/null | awk -v c="$2" -v bin="$3" '
		function hex(s,   i, v) { s = tolower(s); sub(/^0x/, "", s); v = 0
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v }
		/PERF_RECORD_MMAP2/ && $NF == bin && $(NF - 1) ~ /^r-x/ && !delta {
			m = $0; sub(/.*\[/, "", m); st = m; sub(/\(.*/, "", st); pg = m; sub(/.*@ /, "", pg); sub(/ .*/, "", pg)
			delta = hex(st) - hex(pg); next }
		/^[^ \t]/ { if (n) print u; n = ($1 == c); u = ""; next }
		n && u == "" && NF == 2 && $2 != "([kernel.kallsyms])" { u = ($2 == "(" bin ")" && delta) ? sprintf("0x%x", hex($1) + delta) : "?" }
		END { if (n) print u }' | sed 's/^$/?/' | LC_ALL=C sort | uniq -c >"$T/$1.ipc"
	awk '$2 != "?" { print $2 }' "$T/$1.ipc" | GOCACHE=$FIX/gocache "$a2l" tool addr2line "$3" 2>/dev/null | awk 'NR % 2 == 1' >"$T/$1.ipf"
	awk '$2 == "?" { print "? " $1 }' "$T/$1.ipc"
	if [ "$(wc -l <"$T/$1.ipf")" -ne "$(awk '$2 != "?"' "$T/$1.ipc" | wc -l)" ]; then
		awk '$2 != "?" { print "? " $1 }' "$T/$1.ipc"
	else
		awk '$2 != "?"' "$T/$1.ipc" | paste -d' ' "$T/$1.ipf" - | awk '{ print $1, $2 }'
	fi
}
# tol P N1 N2 OTHER: 4 standard deviations (points) of the difference of two
# independent binomial estimates of a share P % from N1 and N2 samples, plus
# OTHER points (perf's samples no function could be named for, which
# pmuprof may place elsewhere).  4 sigma: a false failure ~1 in 15000.
tol() {
	awk -v p="$1" -v a="$2" -v b="$3" -v o="$4" 'BEGIN { q = p / 100; if (q < 0.01) q = 0.01; if (q > 0.99) q = 0.99;
		printf "%.2f\n", 400 * sqrt(q * (1 - q) * (1 / a + 1 / b)) + o + 0.2 }'
}

# every build: Go 1.19 (go/), and Go 1.26 and 1.27 (go126/, go127/) where
# scripts/fixtures.sh built them; each named by the go command of its version
builds="shares shares-stripped"
for v in 126 127; do
	if [ -x "$FIX/go$v/shares" ] && [ -x "$FIX/go$v/shares-stripped" ]; then
		builds="$builds shares$v shares$v-stripped"
	else
		skip "go$v" "no Go 1.$v build of the fixture (scripts/fixtures.sh)"
	fi
done
bin_of() {
	case $1 in
	shares12[67]*) v=${1#shares}; echo "$FIX/go${v%-stripped}/shares${v#12[67]}" ;;
	*) echo "$GOFIX/$1" ;;
	esac
}
# under ASan: one plain and one stripped build (the same code on every version)
if [ -n "$SAN" ]; then
	case $builds in *shares126-stripped*) builds="shares126 shares126-stripped" ;; esac
	echo "# ASan pass: builds $builds only (all six in the normal pass)"
fi
for b in $builds; do
	bin=$(bin_of "$b")
	a2l=$GO
	case $b in shares12[67]*) a2l=/usr/local/go/bin/go ;; esac
	p=$T/$b.pb.gz
	if [ $perf_ok -eq 1 ]; then
		perf record -q -g -e cpu-clock:u -F 2000 -o "$T/$b.perf" -- \
			"$PMUPROF" record --all-frames -e cpu-clock -F 2000 -o "$p" -- "$bin" 2>"$T/$b.err"
		rc=$?
	else
		"$PMUPROF" record --all-frames -e cpu-clock -F 2000 -o "$p" -- "$bin" 2>"$T/$b.err"
		rc=$?
	fi
	if [ $rc -ne 0 ]; then
		fail "$b-record" "exit $rc: $(head -2 "$T/$b.err" | tr '\n' '|')"
		continue
	fi
	pass "$b-record"
	"$PMUPROF" report -i "$p" --folded >"$T/$b.folded"
	"$PMUPROF" report -i "$p" --top 10 >"$T/$b.table"
	total=$(folded_total "$T/$b.folded")
	if [ $perf_ok -eq 1 ]; then
		# the same execution's perf samples (threads of the Go program only)
		perf_leaves "$b" "$(basename "$bin" | cut -c1-15)" "$bin" |
			awk '{ c[$1] += $2 } END { for (f in c) print f, c[f] }' | LC_ALL=C sort >"$T/$b.truth"
		ptotal=$(awk '{ t += $2 } END { print t + 0 }' "$T/$b.truth")
		other=$(awk -v t="$ptotal" '$1 == "?" { o += $2 } END { printf "%.2f\n", t ? 100 * o / t : 0 }' "$T/$b.truth")
		echo "# $b: perf took $ptotal samples of the same run, $other % not in a named function"
		# cpu-clock counts are CPU time / period for both, so they agree up to
		# a period per thread, start-up and lost samples: 5 % and 20 samples
		if [ "$ptotal" -gt 200 ] && awk -v a="$total" -v b="$ptotal" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.05 * b + 20) }'; then
			pass "$b-samples"
		else
			fail "$b-samples" "$total samples, perf took $ptotal of the same run"
		fi
	else
		skip "$b-samples" "perf(1) not usable: no truth to compare the count with"
	fi
	got=""
	for i in 1 2 3 4; do
		s=$(share "$T/$b.folded" main.burn$i)
		got="$got burn$i=$s%"
		if [ $perf_ok -eq 0 ]; then
			skip "$b-burn$i-share" "perf(1) not usable: no truth to compare the share with"
			continue
		fi
		w=$(awk -v f=main.burn$i -v t="$ptotal" '$1 == f { c = $2 } END { printf "%.2f\n", t ? 100 * c / t : 0 }' "$T/$b.truth")
		tl=$(tol "$w" "$total" "$ptotal" "$other")
		if awk -v s="$s" -v w="$w" -v tl="$tl" 'BEGIN { d = s - w; exit !(w > 1 && d <= tl && d >= -tl) }'; then
			pass "$b-burn$i-share"
		else
			fail "$b-burn$i-share" "main.burn$i self $s %, perf of the same run $w % (+- $tl)"
		fi
		got="$got (perf $w +- $tl)"
	done
	echo "# $b: $total samples,$got"
	c=$(complete_pct "$T/$b.folded")
	echo "# $b: complete stacks $c %"
	if awk -v c="$c" 'BEGIN { exit !(c >= 99) }'; then
		pass "$b-complete-stacks"
	else
		fail "$b-complete-stacks" "$c % complete; worst: $(awk '{ print $NF, $0 }' "$T/$b.folded" | sort -rn | grep -v -e '^[0-9]* runtime\.goexit;' -e '^[0-9]* runtime\.mstart;' -e ';main\.main;' -e ' main\.main;' | head -2 | cut -d' ' -f2- | tr '\n' '|')"
	fi
	# the worker goroutines' stacks: goexit -> main.main.funcN -> main.burnN
	if grep -Eq '^runtime\.goexit;main\.main\.func[0-9]+;main\.burn4 [0-9]+$' "$T/$b.folded"; then
		pass "$b-burn4-stack"
	else
		fail "$b-burn4-stack" "$(grep 'main.burn4 ' "$T/$b.folded" | sort -t' ' -k2 -rn | head -2 | tr '\n' '|')"
	fi
	# table: the top four rows are the four burn functions (each holds over 5 %
	# on any CPU, the runtime well under 1 %), in the order of their self
	# shares in the folded stacks (the table and --folded agree)
	t4=$(table_funcs "$T/$b.table" 4 | tr '\n' ' ')
	f4=$(for i in 1 2 3 4; do echo "$(share "$T/$b.folded" main.burn$i) main.burn$i"; done | sort -rn -k1,1 | awk '{ printf "%s ", $2 }')
	if [ "$(echo "$t4" | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ')" = " main.burn1 main.burn2 main.burn3 main.burn4 " ] && [ "$t4" = "$f4" ]; then
		pass "$b-table-order"
	else
		fail "$b-table-order" "table: $t4, by folded self share: $f4"
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
	leaf_names "$T/$b.folded" 2 >"$T/$b.leaves"
done

# each version's stripped build names the same functions as its plain one
for plain in shares shares126 shares127; do
	case " $builds " in *" $plain "*) ;; *) continue ;; esac
	x=${plain#shares}
	sfx=${x:+-go1.${x#1}}
	if [ -s "$T/$plain.leaves" ] && [ -s "$T/$plain-stripped.leaves" ]; then
		if cmp -s "$T/$plain.leaves" "$T/$plain-stripped.leaves"; then
			pass "same-names-stripped$sfx"
		else
			fail "same-names-stripped$sfx" "$(diff "$T/$plain.leaves" "$T/$plain-stripped.leaves" | grep '^[<>]' | tr '\n' ' ')"
		fi
		# and the same set of every frame name in stacks above 2 % (sysmon's
		# nanosleep, now that the kernel's time counts, sits near 1 %)
		for b in "$plain" "$plain-stripped"; do
			awk '{ n = $NF; t += n; l[NR] = $0; c[NR] = n } END { for (i = 1; i <= NR; i++) if (100 * c[i] / t > 2) {
				s = l[i]; sub(/ [0-9]+$/, "", s); k = split(s, fr, ";"); for (j = 1; j <= k; j++) print fr[j] } }' \
				"$T/$b.folded" | LC_ALL=C sort -u >"$T/$b.frames"
		done
		if cmp -s "$T/$plain.frames" "$T/$plain-stripped.frames"; then
			pass "same-frames-stripped$sfx"
		else
			fail "same-frames-stripped$sfx" "$(diff "$T/$plain.frames" "$T/$plain-stripped.frames" | grep '^[<>]' | tr '\n' ' ')"
		fi
	else
		fail "same-names-stripped$sfx" "a build gave no profile"
	fi
done
