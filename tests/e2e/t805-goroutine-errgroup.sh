#!/bin/sh
# errgroup, as Go users ask (golang/go#32223: "everything gets rooted back
# to errgroup.Go, and I want to see which particular usages of errgroup are
# expensive"): tests/go/errgroup starts one task through
# golang.org/x/sync/errgroup's (*Group).Go from three call sites,
# main.site1..3, with work 1:2:3, and prints its own accounting of the work
# each call site's goroutines did.  The goroutines' own stacks are the same
# for the three (errgroup's Go.func1 -> main.task.func1 -> main.work): under
# --creators each call site's share of main.work's samples must be within
# 3 pp of the fixture's truth (or of 3.5 standard deviations of a share of
# that many samples, where a loaded machine gives fewer than ~3 000), on Go
# 1.19, 1.26 (stripped) and 1.27; samples of an unknown creator count
# against the shares.  Without creators the call sites cannot be told apart.
. "$(dirname "$0")/lib.sh"
need_perf
need_tracefs

# site_split FOLDED: percent of all main.work samples under each main.siteN
# [creator] frame, then the number of main.work samples
site_split() {
	awk '$0 ~ /;main\.work [0-9]+$/ { c = $NF; t += c; for (i = 1; i <= 3; i++) if (index($0, "main.site" i " [creator]")) { s[i] += c; break } }
		END { for (i = 1; i <= 3; i++) printf "%.1f ", t ? 100 * s[i] / t : 0; print t + 0 }' "$1"
}
# truth OUT: percent of the work of each site by the fixture's last truth line
truth() {
	awk '/^truth / { for (i = 2; i <= 4; i++) { split($i, kv, "="); v[i - 1] = kv[2] } }
		END { t = v[1] + v[2] + v[3]; for (i = 1; i <= 3; i++) printf "%.1f ", t ? 100 * v[i] / t : -100; print "" }' "$1"
}
# tol WANT N: the larger of 3 pp and 3.5 standard deviations of a share of
# WANT % of N samples (binomial)
tol() { awk -v b="$1" -v n="$2" 'BEGIN { p = b / 100; s = n > 0 ? 100 * 3.5 * sqrt(p * (1 - p) / n) : 100; printf "%.1f", (s > 3 ? s : 3) }'; }
# within OBS WANT N: |OBS - WANT| <= tol WANT N
within() { awk -v a="$1" -v b="$2" -v t="$(tol "$2" "$3")" 'BEGIN { d = a - b; exit !(b >= 0 && d <= t && d >= -t) }'; }

ran=0
for v in go/errgroup go126/errgroup-stripped go127/errgroup; do
	fx=$FIX/$v
	name=$(echo "$v" | tr '/' '-')
	if [ ! -x "$fx" ]; then
		skip "$name" "fixture missing: $fx (run scripts/fixtures.sh; Go 1.26 and 1.27 fixtures need those toolchains)"
		continue
	fi
	ran=$((ran + 1))
	"$PMUPROF" record -q -e cpu-clock -F 2000 --creators -o "$T/$name.pb.gz" -- "$fx" -duration 3s >"$T/$name.out" 2>"$T/$name.err"
	"$PMUPROF" report -i "$T/$name.pb.gz" --folded >"$T/$name.folded"
	set -- $(site_split "$T/$name.folded") $(truth "$T/$name.out")
	echo "# $v: site1 $1 % site2 $2 % site3 $3 % of $4 main.work samples; the fixture's work: $5 % $6 % $7 % (+-$(tol "$7" "$4") pp)"
	if [ "$4" -ge 1000 ] && within "$1" "$5" "$4" && within "$2" "$6" "$4" && within "$3" "$7" "$4"; then
		pass "$name-1-2-3"
	else
		fail "$name-1-2-3" "$1 $2 $3 of $4, truth $5 $6 $7: $(head -2 "$T/$name.err" | tr '\n' '|')"
	fi
	# the chain names the call site and errgroup's go statement
	if grep -Eq 'main\.site3 \[creator\];golang\.org/x/sync/errgroup\.\(\*Group\)\.Go \[creator\];.*main\.task\.func1;main\.work [0-9]+$' "$T/$name.folded"; then
		pass "$name-chain"
	else
		fail "$name-chain" "$(grep 'main.work ' "$T/$name.folded" | sort -t' ' -k2 -rn | head -1 | cut -c1-300)"
	fi
	# the same profile without creators: nothing tells the call sites apart
	# (main.work's stacks; the call sites' own go statements are main's)
	"$PMUPROF" report --no-creators -i "$T/$name.pb.gz" --folded >"$T/$name.nc"
	if ! grep 'main\.site[123]' "$T/$name.nc" | grep -q ';main\.work [0-9]*$' &&
		[ "$(folded_total "$T/$name.nc")" -eq "$(folded_total "$T/$name.folded")" ]; then
		pass "$name-no-creators-blind"
	else
		fail "$name-no-creators-blind" "$(grep 'main\.site.*;main\.work [0-9]*$' "$T/$name.nc" | head -1 | cut -c1-300)"
	fi
done
[ "$ran" -gt 0 ] || fail fixtures "no errgroup fixture built"
exit 0
