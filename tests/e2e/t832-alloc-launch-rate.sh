#!/bin/sh
# --memprofilerate on a launched command (issue 29) whose linker turned heap
# sampling off: tests/go/allocdo uses runtime/pprof for pprof.Do labels
# alone, allocates 2 MiB in main.earlyAlloc first thing in main, then 75 % /
# 25 % of its bytes by function (main.funcA, main.funcB) and, independently,
# by label (tenant=a, tenant=b), and prints its truth and the
# runtime.MemProfileRate main.main started with.  Go 1.26, 1.19 and 1.27
# builds, stripped.  Checks:
#   - launched with --alloc --memprofilerate 4096: the one stderr line that
#     says the rate was set (it was 0), the program saw 4096 from main's
#     first line, at most 1 % of the samples lost (a busy machine);
#     alloc_space shares by function and by label within 3 pp of the
#     truth's, at most 3 % of those bytes without their label;
#     main.earlyAlloc (64 KiB objects: all sampled) within 5 % of its truth;
#   - the same unstripped (Go 1.26; the symbols and the code agree; labels
#     not judged there, see below) and with the privileges dropped (root
#     under sudo: the command as nobody);
#   - without the option: one warning line that names --memprofilerate,
#     the program's rate 0, nothing of main sampled.
# Cost: about 2.5 s per run, 8 runs (22 s here on a busy machine; 4 runs under
# ASan: Go 1.26 only).
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
need_perf
need_file allocdo "$FIX/go126/allocdo-stripped"
need_cmd go "$GO"
need_tracefs

ARGS="-n 1000 -pace 1 -delay 300ms -linger 300ms"
SS="--stack-size 4096" # shallow stacks: half the ring per sample (none lost on a busy machine)

# rows PB: "FUNC TENANT BYTES" per sample of main.* (TENANT - when none, ? unknown)
rows() {
	gotool tool pprof -traces -unit=B -sample_index=alloc_space "$1" 2>/dev/null |
		awk '/^-----/ { if (leaf ~ /^main\./) print leaf, ten, v; leaf = ""; ten = "-"; next }
			/^ *tenant:/ { ten = $2 } /goroutine unknown/ { ten = "?" }
			leaf == "" && $1 ~ /^[0-9.]+B?$/ && NF >= 2 { v = $1; sub(/B$/, "", v); leaf = $2 }
			END { if (leaf ~ /^main\./) print leaf, ten, v }'
}

# share NAME COL: pmuprof's and the truth's shares of main.funcA/B's bytes by COL (1 function, 2 label)
share() {
	awk -v c="$2" '$1 ~ /^main\.func[AB]$/ && $2 ~ /^[ab]$/ { s[$c] += $3 } END { for (k in s) print k, s[k] }' "$T/$1.rows" | sort >"$T/$1.s$2"
	awk -v c="$2" '$1 == "truth" && $2 ~ /^main\.func[AB]$/ { s[$(c + 1)] += $5 } END { for (k in s) print k, s[k] }' "$T/$1.out" | sort >"$T/$1.t$2"
	join -a 2 -e 0 -o 0,1.2,2.2 "$T/$1.s$2" "$T/$1.t$2" |
		awk '{ k[NR] = $1; s[NR] = $2; t[NR] = $3; ss += $2; tt += $3 }
			END { for (i = 1; i <= NR; i++) { d = 100 * s[i] / ss - 100 * t[i] / tt; printf "%s %.1f/%.1f ", k[i], 100 * s[i] / ss, 100 * t[i] / tt; if (d > 3 || d < -3) bad = 1 }
				if (ss == 0 || tt == 0 || NR != 2) bad = 1; print bad ? "BAD" : "ok" }'
}

# labelled NAME: at most 3 % of main.funcA/B's bytes without their label
labelled() {
	u=$(awk '$1 ~ /^main\.func[AB]$/ { t += $3; if ($2 !~ /^[ab]$/) u += $3 } END { printf "%.1f", t ? 100 * u / t : 100 }' "$T/$1.rows")
	echo "# $1: $u % of main.funcA/B's bytes without their label (at most 3)"
	if awk -v u="$u" 'BEGIN { exit !(u <= 3) }'; then pass "$1-labelled"; else fail "$1-labelled" "$u %"; fi
}

# judge NAME [nolabels]: a run with --memprofilerate 4096
judge() {
	n=$1 nl=${2:-}
	lost=$(sed -n 's/.*samples (\([0-9]*\) lost).*/\1/p' "$T/$n.err")
	got=$(sample_count "$T/$n.err")
	set=$(grep -c 'memprofilerate: runtime.MemProfileRate of process [0-9]* set to 4096 (it was 0)' "$T/$n.err")
	rate=$(sed -n 's/^rate //p' "$T/$n.out")
	echo "# $n: set lines $set, rate in main $rate, ${got:-?} samples, ${lost:-?} lost (at most 1 %)"
	if [ "$set" = 1 ] && [ "$rate" = 4096 ] && [ "${got:-0}" -gt 1000 ] &&
		awk -v l="${lost:-1}" -v g="${got:-0}" 'BEGIN { exit !(l <= 0.01 * (l + g)) }'; then
		pass "$n-set"
	else
		fail "$n-set" "set $set, rate '${rate}', lost ${lost:-?}: $(head -3 "$T/$n.err" | tr '\n' '|')"
	fi
	rows "$T/$n.pb.gz" >"$T/$n.rows"
	for c in 1 2; do
		[ $c = 2 ] && [ -n "$nl" ] && break
		r=$(share $n $c)
		echo "# $n: alloc_space % by $(echo x function label | cut -d' ' -f$((c + 1))), pmuprof/truth: $r"
		case $r in *ok) pass "$n-share-$c" ;; *) fail "$n-share-$c" "$r" ;; esac
	done
	[ -z "$nl" ] && labelled $n
	e=$(awk '$1 == "main.earlyAlloc" { s += $3 } END { print s + 0 }' "$T/$n.rows")
	t=$(awk '$1 == "truth" && $2 == "main.earlyAlloc" { print $5 }' "$T/$n.out")
	echo "# $n: main.earlyAlloc (main's first line) $e bytes, truth ${t:-?}"
	if awk -v e="$e" -v t="${t:-0}" 'BEGIN { exit !(t > 0 && e > 0.95 * t && e < 1.05 * t) }'; then
		pass "$n-early"
	else
		fail "$n-early" "$e of ${t:-?}"
	fi
}

run() { # NAME BINARY NOLABELS [ENV...]: launched with --alloc --memprofilerate 4096
	n=$1 bin=$2 nl=$3
	shift 3
	env "$@" "$PMUPROF" record $SS --alloc --memprofilerate 4096 -o "$T/$n.pb.gz" -- "$bin" $ARGS >"$T/$n.out" 2>"$T/$n.err"
	judge $n $nl
}

builds="go126 go go127"
if [ -n "$SAN" ]; then # the same code on every version: one
	builds=go126
	echo "# ASan pass: Go 1.26 only (1.19 and 1.27 in the normal pass)"
fi
for b in $builds; do
	if [ ! -x "$FIX/$b/allocdo-stripped" ]; then
		skip "$b" "no $FIX/$b/allocdo-stripped (scripts/fixtures.sh builds it when the toolchain is there)"
		continue
	fi
	run $b "$FIX/$b/allocdo-stripped" ""
	# without the option: said, naming it; nothing of main sampled
	n=$b-off
	"$PMUPROF" record --alloc -o "$T/$n.pb.gz" -- "$FIX/$b/allocdo-stripped" -n 200 >"$T/$n.out" 2>"$T/$n.err"
	s=$(rows "$T/$n.pb.gz" | wc -l)
	if [ "$(grep -c 'heap sampling off.*--memprofilerate BYTES' "$T/$n.err")" = 1 ] && [ "$(grep -c 'warning' "$T/$n.err")" = 1 ] &&
		[ "$(sed -n 's/^rate //p' "$T/$n.out")" = 0 ] && [ "$s" = 0 ]; then
		pass "$n"
	else
		fail "$n" "$s samples in main: $(head -3 "$T/$n.err" | tr '\n' '|')"
	fi
done
# (labels not judged: unstripped, a few % of the samples get no goroutine part
# at all, with or without this option)
run go126-symbols "$FIX/go126/allocdo" nolabels

# the privileges dropped (root under sudo): the command runs as nobody, traced as before
if [ "$(id -u)" != 0 ]; then
	skip dropped "not root"
else
	chmod 755 "$T"
	cp "$FIX/go126/allocdo-stripped" "$T/allocdo"
	if su -s /bin/sh nobody -c "test -x '$T/allocdo'" 2>/dev/null; then
		run dropped "$T/allocdo" "" SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody
	else
		skip dropped "user nobody cannot reach $T/allocdo (a parent directory closed to others)"
	fi
fi
exit 0
