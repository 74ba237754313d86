#!/bin/sh
# Every frame right: native code by DWARF CFI, cgo across the stack switch,
# inlined Go frames, a frameless Go leaf, kernel frames with --kernel, and
# completeness measured against perf record --call-graph dwarf on the same
# fixtures in the same run (pmuprof's share printed and >= perf's).
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd frames gcc
need_file frames "$GOFIX/inline" "$GOFIX/leaf" "$GOFIX/cgo" "$GOFIX/shares-stripped"

# complete: the stack reaches its root (runtime.goexit, main.main, C main,
# or ld.so's entry stub before main: _start, _dl_start_user) and has no
# [truncated] marker
complete_of() {
	awk '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line);
		k = split(line, fr, ";"); ok = (fr[1] == "_start" || fr[1] == "_dl_start_user"); bad = 0;
		for (i = 1; i <= k; i++) { if (fr[i] == "runtime.goexit" || fr[i] == "main.main" || fr[i] == "main") ok = 1;
			if (fr[i] == "[truncated]") bad = 1 }
		if (ok && !bad) good += n }
		END { if (total == 0) print "0.0"; else printf "%.1f\n", 100 * good / total }' "$1"
}

# perf script -> folded (root first), one line per sample
perf_folded() {
	perf script -i "$1" -F ip,sym 2>/dev/null | awk '
		/^[ \t]*$/ { if (n) { s = fr[n]; for (i = n - 1; i >= 1; i--) s = s ";" fr[i]; print s, 1 } n = 0; next }
		{ sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym); fr[++n] = sym }
		END { if (n) { s = fr[n]; for (i = n - 1; i >= 1; i--) s = s ";" fr[i]; print s, 1 } }'
}

gcc -O2 -g -fomit-frame-pointer -o "$T/cburn" "$top/tests/c/burn/main.c" || { fail c-build; exit 0; }
gcc -O2 -g -o "$T/csys" "$top/tests/c/sys/main.c" || { fail c-build; exit 0; }
(cd "$top/tests/go/inline" && GOCACHE=$FIX/gocache GO111MODULE=off "$GO" build -gcflags=-l -o "$T/inline-l" .) ||
	{ fail inline-build; exit 0; }

# ---- a plain C program, no frame pointers: stacks reach main and _start
rec cburn -- "$T/cburn" 0.5
c=$(complete_of "$T/cburn.folded")
echo "# cburn (C, -fomit-frame-pointer): complete $c %"
if awk -v c="$c" 'BEGIN { exit !(c >= 95) }'; then pass c-reaches-main; else fail c-reaches-main "$c %"; fi
if grep -q '^_start;.*;main;.*work;leaf_loop [0-9]*$' "$T/cburn.folded"; then pass c-leaf-stack; else
	fail c-leaf-stack "$(sort -t' ' -k2 -rn "$T/cburn.folded" | head -2 | tr '\n' '|')"; fi
if grep -q ';sort_some;.*msort' "$T/cburn.folded"; then pass c-libc-frames; else fail c-libc-frames; fi

# ---- a library's constructor, run by ld.so's entry stub (no CFI) before
# main: the stub is the stacks' root, not a cut
gcc -O2 -g -fomit-frame-pointer -shared -fPIC -o "$T/libctor.so" "$top/tests/c/ctor/lib.c" &&
	gcc -O2 -g -fomit-frame-pointer -o "$T/ctor" "$top/tests/c/ctor/main.c" -L"$T" -lctor -Wl,-rpath,"$T" ||
	{ fail c-build; exit 0; }
(CTOR_SCALE=0.3 && export CTOR_SCALE && rec ctor -- "$T/ctor" 0)
set -- $(awk '/;ctor_burn;/ { t += $NF; if ($0 !~ /\[truncated\]/) r += $NF }
	END { print t + 0, r + 0 }' "$T/ctor.folded")
echo "# ctor: $2 of $1 samples in the constructor end at ld.so's entry stub, uncut"
if [ "$1" -gt 0 ] && [ "$2" -eq "$1" ]; then pass c-ctor-rooted; else fail c-ctor-rooted "$2 of $1"; fi

# ---- calls through the PLT: a sample in the stub (its CFA a DWARF
# expression) still reaches the root (a fifth of the samples here)
rec plt -- "$T/ctor" 2
set -- $(awk '{ t += $NF } / [0-9]+$/ && $(NF - 1) ~ /(^|;)ctor\+0x[0-9a-f]+$/ { p += $NF
	if ($0 ~ /^_start;.*;main;ctor\+0x/ && $0 !~ /\[truncated\]/) m += $NF } END { print t + 0, p + 0, m + 0 }' "$T/plt.folded")
echo "# plt: $2 of $1 samples in the PLT stub, $3 of them reach main and the root uncut"
if [ "$2" -gt 0 ] && [ "$3" -eq "$2" ]; then pass c-plt-complete; else fail c-plt-complete "$3 of $2"; fi

# ---- cgo: C -> cgo -> Go to runtime.goexit
rec cgo -- "$GOFIX/cgo" -scale 0.3
# of the samples in the C code (the runtime's own, its system calls now
# that the kernel's time counts, are no part of it)
tot=$(grep 'cburn_inner [0-9]*$' "$T/cgo.folded" | awk '{ t += $NF } END { print t + 0 }')
full=$(grep -E '^runtime\.goexit;main\.main\.func1;main\.worker;main\._Cfunc_cburn;runtime\.cgocall;runtime\.asmcgocall;_cgo_[0-9a-f]+_Cfunc_cburn;cburn;cburn_inner [0-9]+$' "$T/cgo.folded" | awk '{ t += $NF } END { print t + 0 }')
echo "# cgo: $full of $tot samples on the full stack C -> cgo -> Go -> runtime.goexit"
# with runtime.cgocall needs the goroutine stack read from the process; once it
# has exited (the last drain) the kernel's chain gives the rest, without cgocall
part=$(grep -E '^runtime\.goexit;main\.main\.func1;main\.worker;main\._Cfunc_cburn;(runtime\.cgocall;)?runtime\.asmcgocall;_cgo_[0-9a-f]+_Cfunc_cburn;cburn;cburn_inner [0-9]+$' "$T/cgo.folded" | awk '{ t += $NF } END { print t + 0 }')
if [ "$tot" -gt 0 ] && [ $((full * 100)) -ge $((tot * 50)) ] && [ $((part * 100)) -ge $((tot * 95)) ]; then pass cgo-continuous; else
	fail cgo-continuous "$(sort -t' ' -k2 -rn "$T/cgo.folded" | head -2 | tr '\n' '|')"; fi

# ---- inlining: the same logical stacks with and without -gcflags=-l.
# Truth from perf record -e cpu-clock:u (no call graph: the leaf symbol
# only) of the same execution (the split between the three functions of the
# -l build moves from one execution to the next: 12 to 22 % in main.outer
# under load here): with -l, main.outer, main.mid and main.mix are real
# functions, so each one's self share is perf's; without, perf sees one
# function, main.outer, whose share the three logical frames share.  Shape,
# on any machine: every sample in them is on the one chain.
perf_ok=0
perf record -q -e cpu-clock -o "$T/probe.data" -- /bin/true >/dev/null 2>&1 && perf_ok=1
for b in inline inline-l; do
	bin=$GOFIX/inline
	[ $b = inline-l ] && bin=$T/inline-l
	if [ $perf_ok = 1 ]; then
		perf record -q -e cpu-clock:u -F "${REC_HZ:-1000}" -o "$T/$b.perf" -- \
			"$PMUPROF" record --all-frames -q -e cpu-clock -F "${REC_HZ:-1000}" -o "$T/$b.pb.gz" -- "$bin" -scale 0.5 >/dev/null 2>"$T/$b.err"
		"$PMUPROF" report -i "$T/$b.pb.gz" --folded >"$T/$b.folded" 2>/dev/null || : >"$T/$b.folded"
	else
		rec "$b" -- "$bin" -scale 0.5
	fi
done
# leaf counts "sym n" of the samples of threads named COMM in a perf.data
perf_leaves() {
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk -v c="$2" '$1 == c && NF >= 3 { n[$3]++ } END { for (f in n) print f, n[f] }'
}
# leaf counts "sym n" of folded stacks
folded_leaves() {
	awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); c[fr[k]] += n }
		END { for (f in c) print f, c[f] }' "$1"
}
# agree NAME A NA B NB: counts A of NA and B of NB, the same share within
# 3.5 standard deviations of two binomial samples, and at least 2 pp
agree() {
	awk -v n="$1" -v a="$2" -v na="$3" -v b="$4" -v nb="$5" 'BEGIN {
		if (na <= 0 || nb <= 0) exit 1
		pa = a / na; pb = b / nb; p = (a + b) / (na + nb)
		tol = 3.5 * sqrt(p * (1 - p) * (1 / na + 1 / nb)); if (tol < 0.02) tol = 0.02
		d = pa - pb; if (d < 0) d = -d
		printf "# %s: pmuprof %.1f %%, perf %.1f %% (tolerance %.1f pp)\n", n, 100 * pa, 100 * pb, 100 * tol
		exit !(d <= tol) }'
}
chain='runtime.goexit;runtime.main;main.main;main.outer'
for b in inline inline-l; do
	t=$(folded_total "$T/$b.folded")
	# samples whose leaf is outer, mid or mix, and those of them not on the chain
	set -- $(awk -v c="$chain" '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); f = fr[k]
		if (f == "main.outer" || f == "main.mid" || f == "main.mix") { in_ += n
			want = c; if (f != "main.outer") want = want ";main.mid"; if (f == "main.mix") want = want ";main.mix"
			if (line != want) bad += n }
		if (f == "main.mix") mix += n }
		END { print in_ + 0, bad + 0, mix + 0 }' "$T/$b.folded")
	work=$1 bad=$2 mix=$3
	echo "# $b: $work of $t samples in main.outer/mid/mix, $bad of them off the chain, $mix in main.mix"
	if [ "$t" -gt 0 ] && [ "$bad" -eq 0 ] && [ "$mix" -gt 0 ]; then pass "$b-chain"; else fail "$b-chain" "$bad of $work off the chain, $mix in mix"; fi
	if [ $perf_ok = 0 ]; then
		skip "$b-vs-perf" "perf record does not work here"
		continue
	fi
	perf_leaves "$T/$b.perf" "$b" >"$T/$b.perf.leaves"
	folded_leaves "$T/$b.folded" >"$T/$b.leaves"
	pt=$(awk '{ t += $2 } END { print t + 0 }' "$T/$b.perf.leaves")
	of() { awk -v f="$1" '$1 == f { print $2; x = 1 } END { if (!x) print 0 }' "$2"; }
	ok=1
	if [ $b = inline ]; then
		agree "$b main.outer+mid+mix" "$work" "$t" "$(of main.outer "$T/$b.perf.leaves")" "$pt" || ok=0
	else
		for f in main.outer main.mid main.mix; do
			agree "$b $f" "$(of $f "$T/$b.leaves")" "$t" "$(of $f "$T/$b.perf.leaves")" "$pt" || ok=0
		done
	fi
	if [ $ok = 1 ]; then pass "$b-vs-perf"; else fail "$b-vs-perf" "self shares differ from perf's of the same execution"; fi
done
# the inlined frames carry their own lines (MIX-BODY in mix, MID-CALL in mid)
src=$top/tests/go/inline/main.go
lmix=$(grep -n 'MIX-BODY' "$src" | cut -d: -f1)
lmid=$(grep -n 'MID-CALL' "$src" | cut -d: -f1)
if gotool tool pprof -traces "$T/inline.pb.gz" 2>/dev/null >"$T/inline.traces" &&
	grep -q "main\.mix" "$T/inline.traces"; then
	gotool tool pprof -raw "$T/inline.pb.gz" 2>/dev/null >"$T/inline.raw"
	if grep -Eq "main\.mix .*main\.go:($lmix|$((lmix + 1))|$((lmix + 2))|$((lmix + 3)))( |$)" "$T/inline.raw" &&
		grep -Eq "main\.mid .*main\.go:$lmid( |$)" "$T/inline.raw"; then
		pass inline-lines
	else
		fail inline-lines "$(grep -E 'main\.(mix|mid) ' "$T/inline.raw" | head -3 | tr '\n' '|')"
	fi
else
	skip inline-lines "go tool pprof unavailable"
fi

# ---- a frameless leaf loses no caller
rec leaf -- "$GOFIX/leaf" -scale 0.5
t=$(folded_total "$T/leaf.folded")
bad=$(awk '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";");
	if (fr[k] == "main.leaf" && (k < 2 || fr[k - 1] != "main.work")) b += $NF } END { print b + 0 }' "$T/leaf.folded")
echo "# leaf: $bad of $t samples in main.leaf without main.work as caller"
if [ "$t" -gt 0 ] && [ "$bad" -eq 0 ]; then pass leaf-keeps-caller; else fail leaf-keeps-caller "$bad of $t"; fi

# ---- kernel: syscall-heavy C with --kernel has kernel frames under the user stack
rec csys --kernel -- "$T/csys" "$T" 1
if grep -Eq ';main;[^ ]*(entry_SYSCALL_64|do_syscall_64)' "$T/csys.folded"; then pass kernel-frames; else
	fail kernel-frames "$(sort -t' ' -k2 -rn "$T/csys.folded" | head -2 | tr '\n' '|')"; fi
if gotool tool pprof -raw "$T/csys.pb.gz" 2>/dev/null | grep -q 'kernel.kallsyms'; then pass kernel-mapping; else
	fail kernel-mapping "no [kernel.kallsyms] mapping"; fi
# report --no-kernel: the kernel frames folded into the user frame that
# entered the kernel -- exactly the --kernel stacks without their _[k]
# frames, merged; a kernel-only stack becomes [kernel]; the totals equal
"$PMUPROF" report -i "$T/csys.pb.gz" --no-kernel --folded | sort >"$T/csys.nok"
awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); s = ""
	for (i = 1; i <= k; i++) if (fr[i] !~ /_\[k\]$/) s = s (s == "" ? "" : ";") fr[i]
	if (s == "") s = "[kernel]"; c[s] += n } END { for (x in c) print x, c[x] }' "$T/csys.folded" |
	sort >"$T/csys.nok.want"
if [ -s "$T/csys.nok" ] && cmp -s "$T/csys.nok" "$T/csys.nok.want" && ! grep -q '_\[k\]' "$T/csys.nok"; then
	pass report-no-kernel
else
	fail report-no-kernel "$(diff "$T/csys.nok.want" "$T/csys.nok" | head -4 | tr '\n' '|')"
fi

# ---- stacks past the copy: a 300-deep recursion with a 1 KiB copy is read on
# from the target (checked against the kernel's callchain as far as its 127
# frames go); with --no-callchain, from the target alone; a capture replays it
need_file deep "$GOFIX/benchdeep"
# (of the samples in main.down: the runtime's own, sysmon's system calls
# now that the kernel's time counts, are no part of it)
full_of() {
	awk '/;main\.down/ { n = $NF; t += n; k = gsub(/;main\.down/, "&"); if ($0 ~ /^runtime\.goexit;/ && k >= 300) g += n }
		END { if (t == 0) print "0.0"; else printf "%.1f\n", 100 * g / t }' "$1"
}
for how in default:--stack-size=1024 no-callchain:--no-callchain; do
	n=deep-${how%%:*}
	rec "$n" "${how#*:}" --stack-size=1024 --raw "$T/$n.raw" -- "$GOFIX/benchdeep" -depth 300 -scale 0.2
	c=$(full_of "$T/$n.folded")
	echo "# $n: $c % of samples have all 300 frames of main.down under goexit"
	if awk -v c="$c" 'BEGIN { exit !(c >= 95) }'; then pass "$n-past-copy"; else fail "$n-past-copy" "$c %"; fi
	"$PMUPROF" report -i "$T/$n.raw" --folded 2>/dev/null | sort >"$T/$n.replay"
	sort "$T/$n.folded" >"$T/$n.sorted"
	if cmp -s "$T/$n.replay" "$T/$n.sorted"; then pass "$n-replay"; else
		fail "$n-replay" "$(diff "$T/$n.sorted" "$T/$n.replay" | wc -l) lines differ"; fi
done

# ---- completeness vs perf --call-graph dwarf, same fixtures, same run
if ! perf record -q -e cpu-clock -o "$T/probe.data" -- /bin/true >/dev/null 2>&1; then
	skip vs-perf "perf record does not work here"
	exit 0
fi
for f in cburn:"$T/cburn 0.3" cgo:"$GOFIX/cgo -scale 0.2" leaf:"$GOFIX/leaf -scale 0.3" \
	inline:"$GOFIX/inline -scale 0.3" shares-stripped:"$GOFIX/shares-stripped -scale 0.1"; do
	n=${f%%:*}
	cmd=${f#*:}
	# shellcheck disable=SC2086
	perf record -q -e cpu-clock -F 1000 --call-graph dwarf -o "$T/$n.perf" -- $cmd >/dev/null 2>&1
	perf_folded "$T/$n.perf" >"$T/$n.perf.folded"
	# shellcheck disable=SC2086
	rec "$n-vs" -- $cmd
	mine=$(complete_of "$T/$n-vs.folded")
	theirs=$(complete_of "$T/$n.perf.folded")
	echo "# completeness $n: pmuprof $mine %, perf --call-graph dwarf $theirs %"
	if awk -v a="$mine" -v b="$theirs" 'BEGIN { exit !(a + 0.5 >= b) }'; then pass "vs-perf-$n"; else
		fail "vs-perf-$n" "pmuprof $mine % < perf $theirs %"; fi
done
