#!/bin/sh
# Goroutines read from outside in real, stripped Go binaries of the newest
# releases, where only the table per Go version gives the offsets: esbuild
# (go1.26) bundling 400 modules, lefthook (go1.27) running 12 commands of a
# hook in parallel.  Known answers: no "off" warning; most samples find
# their goroutine (measured 52-74 % esbuild, 83-90 % lefthook); goroutine ids
# positive, many and distinct; the creator frames are the programs' own
# functions that start goroutines (esbuild's scanner and linker, lefthook's
# controller); samples on the system stack cross back to the goroutine's
# runtime.goexit through g.sched (measured 90 % and 98 %).  Shares are of
# the samples that ran for a goroutine (a stack holding runtime.goexit) or
# that have a creator, not of all: how much an idle M spins without one
# depends on the machine's core count and load.
. "$(dirname "$0")/lib.sh"
need_perf
need_cmd go "$GO"

# goroutines NAME MIN-IDS CREATOR-RE CMD...: record CMD, check the
# properties above; CREATOR-RE must match the creators of half the samples
goroutines() {
	gn=$1 gmin=$2 gcre=$3
	shift 3
	PMUPROF_GOR_STATS=1 "$PMUPROF" record --all-frames -e cpu-clock -F 2000 --creators=1 -o "$T/$gn.pb.gz" -- "$@" \
		>"$T/$gn.out" 2>"$T/$gn.err"
	grc=$?
	"$PMUPROF" report -i "$T/$gn.pb.gz" --folded >"$T/$gn.folded"
	if [ $grc -eq 0 ] && ! grep -q 'goroutine ids, labels and creators are off' "$T/$gn.err" &&
		grep -q 'pmuprof: goroutines: ' "$T/$gn.err"; then
		pass "$gn-layout"
	else
		fail "$gn-layout" "exit $grc: $(grep -v '^pmuprof: wrote' "$T/$gn.err" | head -2 | tr '\n' '|')"
	fi
	# found / inspected, from the stats line (printed), and of the samples
	# whose stack holds runtime.goexit, those with a goroutine label (checked:
	# a wrong offset in the layout finds next to none; the rest is how late
	# the reads come, i.e. the load: 52 to 74 % measured, so a quarter)
	f=$(sed -n 's/^pmuprof: goroutines: \([0-9]*\) inspected, \([0-9]*\) found.*/\1 \2/p' "$T/$gn.err" |
		awk '{ printf "%.1f\n", $1 ? 100 * $2 / $1 : 0 }')
	gotool tool pprof -raw "$T/$gn.pb.gz" 2>/dev/null >"$T/$gn.raw"
	set -- $(awk '/^Samples:/ { m = 1; next } /^Locations/ { m = 2; next } /^Mappings/ { m = 3; next }
		m == 1 && $2 ~ /^[0-9]+:$/ { ns++; cnt[ns] = $1; st[ns] = ""; for (i = 3; i <= NF; i++) st[ns] = st[ns] " " $i; next }
		m == 1 && /goroutine:\[/ { lab[ns] = 1; next }
		m == 2 && $1 ~ /^[0-9]+:$/ { id = substr($1, 1, length($1) - 1); if ($4 == "runtime.goexit") gx[id] = 1; next }
		m == 2 && $1 == "runtime.goexit" { gx[id] = 1 }
		END { for (s = 1; s <= ns; s++) { k = split(st[s], a, " "); g = 0; for (i = 1; i <= k; i++) if (a[i] in gx) g = 1
			if (g) { tg += cnt[s]; if (lab[s]) lg += cnt[s] } }
			printf "%.1f %d\n", tg ? 100 * lg / tg : 0, tg }' "$T/$gn.raw")
	echo "# $gn: goroutine found for ${f:-?} % of the samples inspected, $1 % of the $2 that reach runtime.goexit"
	if awk -v f="$1" -v n="$2" 'BEGIN { exit !(f >= 25 && n >= 20) }'; then pass "$gn-found"; else fail "$gn-found" "$1 % of $2 (stats: ${f:-none})"; fi
	# goroutine ids: positive, below what a short run makes, and many
	sed -n 's/.*goroutine:\[\([0-9-]*\)\].*/\1/p' "$T/$gn.raw" |
		sort -un >"$T/$gn.ids"
	set -- $(awk 'NR == 1 { lo = $1 } { hi = $1 } END { print NR, lo + 0, hi + 0 }' "$T/$gn.ids")
	echo "# $gn: $1 distinct goroutine ids, $2 .. $3"
	if [ "$1" -ge "$gmin" ] && [ "$2" -ge 1 ] && [ "$3" -lt 1000000 ]; then
		pass "$gn-ids"
	else
		fail "$gn-ids" "$1 ids (want >= $gmin), $2 .. $3"
	fi
	# creators: named functions; the program's own for most samples that
	# have one the runtime did not start (GC workers: their share is the
	# machine's, a quarter of its cores while marking)
	set -- $(awk -v re="$gcre" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s);
		if (match(s, /^[^;]* \[creator\]/)) { c = substr(s, 1, RLENGTH - 10); if (c !~ /^runtime\./) t += n;
			if (c ~ re) own += n; if (c !~ /^[A-Za-z_][^ ]*\.[^ ]+$/) bad += n } }
		END { printf "%.1f %d %d\n", t ? 100 * own / t : 0, bad, t }' "$T/$gn.folded")
	echo "# $gn: $1 % of the $3 samples with a creator outside the runtime created by /$gcre/"
	if awk -v o="$1" 'BEGIN { exit !(o >= 80) }' && [ "$2" -eq 0 ]; then
		pass "$gn-creators"
	else
		fail "$gn-creators" "$1 % own, $2 samples with an unnamed creator: $(grep -o '^[^;]* \[creator\]' "$T/$gn.folded" | sort | uniq -c | sort -rn | head -3 | tr '\n' '|')"
	fi
	# the system stack continues to runtime.goexit, except where the
	# goroutine's stack is being copied, freed or switched (coroutines)
	# (truncated: of the stacks with a Go function, not those of git and sh)
	set -- $(awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		if (s ~ /(^|;)[A-Za-z_][^;]*\.[^;]/) { t += n; if (s ~ /\[truncated\]/ && s !~ /(^|;)runtime\.(copystack|goexit0|coroswitch_m|schedule)(;|$)/) tr += n }
		if (s ~ /(^|;)runtime\.(systemstack|mcall|morestack)(;|$)/ && s !~ /(^|;)runtime\.mcall$/ &&
		    s !~ /(^|;)runtime\.(copystack|goexit0|coroswitch_m)(;|$)/) { ss += n; if (s ~ /(^|;)runtime\.goexit;/) g += n } }
		END { printf "%.1f %.1f %d\n", ss ? 100 * g / ss : 0, t ? 100 * tr / t : 100, ss }' "$T/$gn.folded")
	echo "# $gn: $2 % of Go stacks truncated (outside copystack/goexit0/coroswitch_m/schedule); $1 % of $3 on the system stack reach runtime.goexit"
	if awk -v g="$1" -v tr="$2" -v n="$3" 'BEGIN { exit !(g >= 70 && tr <= 5 && n >= 20) }'; then
		pass "$gn-system-stack"
	else
		fail "$gn-system-stack" "$1 % of $3 reach goexit, $2 % truncated"
	fi
}

# ---- esbuild, Go 1.26 ----
esb=$NPM/@esbuild/linux-x64/bin/esbuild
if [ -x "$esb" ]; then
	"$top/scripts/gen-js.sh" "$T/src" 400 60
	goroutines esbuild 50 '^github\.com/evanw/esbuild/' "$esb" --bundle --minify --log-level=warning \
		--outfile="$T/out.js" "$T/src/index.js"
else
	skip esbuild "fixture missing: $esb (run scripts/fixtures.sh)"
fi

# ---- lefthook, Go 1.27: a hook of 12 parallel commands, each filtering 30000 files ----
lh=$NPM/lefthook-linux-x64/bin/lefthook
if [ ! -x "$lh" ]; then
	skip lefthook "fixture missing: $lh (run scripts/fixtures.sh)"
elif ! command -v git >/dev/null; then
	skip lefthook "git not installed"
else
	mkdir "$T/repo"
	awk 'BEGIN { for (i = 0; i < 30000; i++) printf "d%d/s%d/f%d.%s\n", i % 40, i % 7, i, i % 3 ? "go" : "js" }' >"$T/files"
	{
		printf 'pre-commit:\n  parallel: true\n  commands:\n'
		for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
			printf '    c%d:\n      files: cat %s\n      glob: "d%d*/**/*.{js,go}"\n' "$i" "$T/files" $((i % 4))
			printf '      exclude: ["**/f1*.go"]\n      run: echo {files}\n'
		done
	} >"$T/repo/lefthook.yml"
	(cd "$T/repo" && git init -q . && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m t)
	cd "$T/repo" || exit 1
	goroutines lefthook 12 '^github\.com/evilmartians/lefthook/' "$lh" run pre-commit
	cd "$top" || exit 1
fi
