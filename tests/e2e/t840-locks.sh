#!/bin/sh
# Lock contention from outside (record --locks, issue 19) on tests/go/locks:
# ten goroutines contend for one sync.Mutex in identical loops, each
# seven rounds of ten through main.siteA and three through main.siteB
# (seven goroutines at one site and three at the other split the waiting
# 63-76 % in runs of the fixture alone: the scheduler's luck per
# goroutine, not the profiler's); one more goroutine
# locks a second mutex nobody else takes (main.lonely).  The fixture
# prints its truth ("truth SITE GOROUTINES LOCKS WAITED_NS": the locks
# taken at each site and the time spent in Lock, measured around each
# call).  Go 1.26, 1.19 and 1.27 builds, launched (stripped) and attached,
# every lock watched (--locks-max-rate 0: t841 tests the budget).
# Checks:
#   - no sample lost, every recorded wait paired (none "lost");
#   - contentions split 70/30 +- 5 pp between the two sites; the delay's
#     split within 3 pp of the one the fixture measured in the same run
#     (the waiting itself does not split 70/30: 62-73 % at site A in runs
#     of all three builds, a few long waits weigh much);
#   - contentions in all within 10 % of the contended Locks the fixture
#     counted (a TryLock that failed before the Lock);
#   - contentions at each site at most the locks taken there (one per
#     slow-path call: an entry probe that fired twice would exceed it),
#     and at least a tenth of them (ten goroutines on one lock);
#   - the delay at each site within 80-105 % of the time the fixture
#     measured around its Lock calls (the slow path is most of it);
#   - the uncontended mutex (main.lonely) in no sample, and one "mutex"
#     label on every wait: the address of the contended one;
#   - the profile types contentions/count and delay/nanoseconds;
#   - with --creators (Go 1.26): at most 25 % of the waits with the
#     goroutine unknown, the creator frames there, and a --raw capture
#     replayed gives the same profile;
#   - an RWMutex (Go 1.26, 1.27: -rw): readers waiting for writers and
#     writers for readers seen, each side's delay as the fixture measured
#     it (80-105 %, split within 5 pp), the label the RWMutex's address;
#     Go 1.19 too (an RLock waits in the Mutex's semaphore function
#     there: watched outside lockSlow, the label the semaphore's address,
#     not compared);
#   - the holders (holder_contentions: the releases with waiters, the
#     releasing goroutine's stack) against the program's own mutex
#     profile (the unlockers', rate 1, the same run): 90-125 % (unlockSlow
#     also runs when the waiter is already awake), the sites' shares
#     within 5 pp;
#   - against the program's own block profile (the runtime's, rate 1, the
#     same run): the delay's split within 5 pp of its, and at least its
#     total (it counts the sleep in the semaphore only); its contentions
#     (the Locks that slept in the semaphore; pmuprof's, every slow-path
#     Lock: 95-96 % of its in runs here) within 10 % in all, the sites'
#     shares within 5 pp.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
need_perf
need_file locks "$FIX/go126/locks" "$FIX/go126/locks-stripped"
need_cmd go "$GO"
need_tracefs

# judge NAME PB OUT ERR
judge() {
	n=$1 pb=$2 out=$3 err=$4
	lost=$(sed -n 's/.*samples (\([0-9]*\) lost).*/\1/p' "$err")
	for si in contentions delay; do
		"$PMUPROF" report -i "$pb" --folded --sample-index $si 2>/dev/null >"$T/$n.$si"
	done
	r=$(awk -v out="$out" '
		/runtime\.lock2/ { next } # a runtime lock sleep (t842), not the mutexes
		FILENAME ~ /contentions$/ { v = $NF; if ($0 ~ /;main\.siteA;/) ca += v; else if ($0 ~ /;main\.siteB;/) cb += v; if ($0 ~ /main\.lonely/) ql += v; next }
		{ v = $NF; if ($0 ~ /;main\.siteA;/) da += v; else if ($0 ~ /;main\.siteB;/) db += v; if ($0 ~ /main\.lonely/) ql += v }
		END {
			while ((getline l < out) > 0) { split(l, f, " "); if (f[1] == "truth") { lk[f[2]] = f[4]; w[f[2]] = f[5]; ct[f[2]] = f[6] } }
			printf "contentions A %d B %d (locks %d %d, contended %d %d), delay A %.0f B %.0f ns (measured %.0f %.0f), lonely %d", ca, cb, lk["main.siteA"], lk["main.siteB"], ct["main.siteA"], ct["main.siteB"], da, db, w["main.siteA"], w["main.siteB"], ql
			bad = ""
			if (ca + cb == 0 || da + db == 0) bad = bad " none"
			else {
				pc = 100 * ca / (ca + cb); pd = 100 * da / (da + db)
				tw = w["main.siteA"] + w["main.siteB"]; pw = tw ? 100 * w["main.siteA"] / tw : 0
				printf ", site A share %.1f/%.1f %% (measured delay %.1f %%)", pc, pd, pw
				if (pc < 65 || pc > 75) bad = bad " contentions-share"
				if (pd < pw - 3 || pd > pw + 3) bad = bad " delay-share"
			}
			if (ca > lk["main.siteA"] || cb > lk["main.siteB"] || ca < lk["main.siteA"] / 10 || cb < lk["main.siteB"] / 10) bad = bad " count"
			# the contended Locks the fixture counted (a TryLock failed first): +-10 % in all
			tc = ct["main.siteA"] + ct["main.siteB"]
			if (tc && (ca + cb < 0.9 * tc || ca + cb > 1.1 * tc)) bad = bad " contended"
			if (da < 0.8 * w["main.siteA"] || da > 1.05 * w["main.siteA"] || db < 0.8 * w["main.siteB"] || db > 1.05 * w["main.siteB"]) bad = bad " delay"
			if (ql) bad = bad " lonely"
			print bad == "" ? " ok" : " BAD:" bad
		}' "$T/$n.contentions" "$T/$n.delay")
	echo "# $n: $r, lost ${lost:-?}"
	case $r in
	*" ok") pass "$n" ;;
	*) fail "$n" "$r" ;;
	esac
	# the mutex label: every wait's, the contended mutex's address (as the fixture prints it)
	gotool tool pprof -tags -sample_index=contentions -ignore='runtime\.lock2' "$pb" 2>/dev/null |
		awk '/^ *[a-z]+: Total/ { k = $1 } k == "mutex:" && $NF ~ /^0x/ { print $NF, $1 }' >"$T/$n.mutex"
	mu=$(awk '$1 == "addr" && $2 == "mu" { print $3 }' "$out")
	echo "# $n: mutex labels (address, contentions): $(tr '\n' ' ' <"$T/$n.mutex")(mu $mu)"
	if [ -n "$mu" ] && [ "$(wc -l <"$T/$n.mutex")" = 1 ] && [ "$(cut -d' ' -f1 "$T/$n.mutex")" = "$mu" ]; then
		pass "$n-mutex"
	else
		fail "$n-mutex" "$(tr '\n' ' ' <"$T/$n.mutex") mu $mu"
	fi
	if [ "${lost:-1}" = 0 ] && gotool tool pprof -raw "$pb" 2>/dev/null | grep -q '^PeriodType: contentions count' &&
		gotool tool pprof -raw "$pb" 2>/dev/null | grep -q 'contentions/count delay/nanoseconds' &&
		gotool tool pprof -comments "$pb" 2>/dev/null | grep -q '^locks: .* 0 still waiting at the end, 0 waiting before the start, 0 lost, 0 unreadable; 0 without a mutex label; [0-9]* inside another wait$'; then
		pass "$n-types"
	else
		fail "$n-types" "lost ${lost:-?}: $(gotool tool pprof -comments "$pb" 2>&1 | grep locks:) $(head -2 "$err" | tr '\n' '|')"
	fi
}

builds="go126 go go127"
if [ -n "$SAN" ]; then # the same code on every version: one
	builds=go126
	echo "# ASan pass: Go 1.26 only (1.19 and 1.27 in the normal pass)"
fi
for b in $builds; do
	d=$FIX/$b
	if [ ! -x "$d/locks" ]; then
		skip "$b" "no $d/locks (scripts/fixtures.sh builds it when the toolchain is there)"
		continue
	fi
	n=$b-launch
	"$PMUPROF" record --locks --locks-max-rate 0 -o "$T/$n.pb.gz" -- "$d/locks-stripped" >"$T/$n.out" 2>"$T/$n.err"
	judge $n "$T/$n.pb.gz" "$T/$n.out" "$T/$n.err"
	if [ $b = go126 ]; then
		# with --creators: the waiters' goroutines known (the log of creations;
		# without it the waiter has parked by the time its sample is read); a
		# --raw capture replayed gives the same profile
		n=$b-creators
		"$PMUPROF" record --locks --locks-max-rate 0 --creators --raw "$T/$n.data" -o "$T/$n.pb.gz" -- "$d/locks-stripped" >"$T/$n.out" 2>"$T/$n.err"
		judge $n "$T/$n.pb.gz" "$T/$n.out" "$T/$n.err"
		"$PMUPROF" report -i "$T/$n.data" --pprof "$T/$n.replay.pb.gz" >/dev/null 2>"$T/$n.rerr"
		for f in pb.gz replay.pb.gz; do
			gotool tool pprof -traces -sample_index=delay "$T/$n.$f" 2>/dev/null | grep -v '^ *\(File\|Type\|Time\|Duration\|Build ID\):' >"$T/$n.$f.traces"
		done
		if [ -s "$T/$n.pb.gz.traces" ] && cmp -s "$T/$n.pb.gz.traces" "$T/$n.replay.pb.gz.traces"; then
			pass "$n-replay"
		else
			fail "$n-replay" "$(diff "$T/$n.pb.gz.traces" "$T/$n.replay.pb.gz.traces" | head -5 | tr '\n' '|') $(head -2 "$T/$n.rerr")"
		fi
		u=$(awk '{ t += $NF } /goroutine unknown/ { u += $NF } END { printf "%.1f", t ? 100 * u / t : 100 }' "$T/$n.contentions")
		echo "# $n: $u % of the waits with the goroutine unknown (at most 25)"
		if awk -v u="$u" 'BEGIN { exit !(u <= 25) }' && grep -q 'main\.main \[creator\];' "$T/$n.contentions"; then
			pass "$n-goroutines"
		else
			fail "$n-goroutines" "$u % unknown"
		fi
	fi
	# against the runtime's own block profile (SetBlockProfileRate(1)), the
	# same run: the delay's split between the sites within 5 pp of its
	# (it counts the time asleep in the semaphore only: pmuprof's delay,
	# the whole slow path, spinning too, at least its)
	n=$b-runtime
	"$PMUPROF" record --locks --locks-max-rate 0 -o "$T/$n.pb.gz" -- "$d/locks" -rate 1 -block "$T/$n.block.pb.gz" -prof "$T/$n.mutex.pb.gz" >"$T/$n.out" 2>"$T/$n.err"
	"$PMUPROF" report -i "$T/$n.pb.gz" --folded --sample-index delay 2>/dev/null >"$T/$n.delay"
	gotool tool pprof -traces -unit=ns -sample_index=delay "$T/$n.block.pb.gz" 2>/dev/null >"$T/$n.traces"
	r=$(awk 'FILENAME ~ /delay$/ { if ($0 ~ /;main\.siteA;/) a += $NF; else if ($0 ~ /;main\.siteB;/) b += $NF; next }
		/^-----/ { if (lock && site == "main.siteA") ra += v; if (lock && site == "main.siteB") rb += v; lock = 0; site = ""; next }
		{ f = $1 } $1 ~ /^[0-9.]+ns$/ { v = $1; sub(/ns$/, "", v); f = $2 }
		f == "sync.(*Mutex).Lock" { lock = 1 } f ~ /^main\.site[AB]$/ { site = f }
		END { if (lock && site == "main.siteA") ra += v; if (lock && site == "main.siteB") rb += v
			if (a + b == 0 || ra + rb == 0) { print "none BAD"; exit }
			p = 100 * a / (a + b); q = 100 * ra / (ra + rb)
			printf "site A share of the delay %.1f %%, the runtime'"'"'s %.1f %%; delay %.0f ns, the runtime'"'"'s %.0f ns", p, q, a + b, ra + rb
			print (p - q < 5 && q - p < 5 && a + b >= ra + rb) ? " ok" : " BAD" }' "$T/$n.delay" "$T/$n.traces")
	echo "# $n: $r"
	case $r in
	*" ok") pass "$n" ;;
	*) fail "$n" "$r" ;;
	esac
	# the contentions against the block profile's (its Lock stacks: one per
	# Lock that slept in the semaphore; pmuprof's, one per slow-path Lock):
	# the total within 10 %, the sites' shares within 5 pp
	"$PMUPROF" report -i "$T/$n.pb.gz" --folded --sample-index contentions 2>/dev/null >"$T/$n.contentions"
	gotool tool pprof -traces -sample_index=contentions "$T/$n.block.pb.gz" 2>/dev/null >"$T/$n.ctraces"
	r=$(awk 'FILENAME ~ /contentions$/ { if ($0 ~ /;main\.siteA;/) a += $NF; else if ($0 ~ /;main\.siteB;/) b += $NF; next }
		/^-----/ { if (lock && site == "main.siteA") ra += v; if (lock && site == "main.siteB") rb += v; lock = 0; site = ""; next }
		{ f = $1 } $1 ~ /^[0-9]+$/ && NF >= 2 { v = $1; f = $2 }
		f == "sync.(*Mutex).Lock" { lock = 1 } f ~ /^main\.site[AB]$/ { site = f }
		END { if (lock && site == "main.siteA") ra += v; if (lock && site == "main.siteB") rb += v
			if (a + b == 0 || ra + rb == 0) { print "none BAD"; exit }
			p = 100 * a / (a + b); q = 100 * ra / (ra + rb)
			printf "contentions %d, the runtime'"'"'s %d (%.1f %%); site A share %.1f %%, the runtime'"'"'s %.1f %%", a + b, ra + rb, 100 * (a + b) / (ra + rb), p, q
			print (p - q < 5 && q - p < 5 && a + b >= 0.9 * (ra + rb) && a + b <= 1.1 * (ra + rb)) ? " ok" : " BAD" }' "$T/$n.contentions" "$T/$n.ctraces")
	echo "# $n-contentions: $r"
	case $r in
	*" ok") pass "$n-contentions" ;;
	*) fail "$n-contentions" "$r" ;;
	esac
	# the holders (the releases with waiters, unlockSlow) against the
	# program's own mutex profile (the unlockers' stacks, rate 1): the
	# sites' shares within 5 pp; the releases 90-125 % of its: unlockSlow
	# is entered too when the waiter is already awake (spinning, mutexWoken)
	# and nothing is handed over, which the runtime does not record (101-105 %
	# on a quiet machine, 112-114 % with a suite running beside)
	"$PMUPROF" report -i "$T/$n.pb.gz" --folded --sample-index holder_contentions 2>/dev/null >"$T/$n.holders"
	gotool tool pprof -top -sample_index=contentions "$T/$n.mutex.pb.gz" 2>/dev/null >"$T/$n.mtop"
	r=$(awk 'FILENAME ~ /holders$/ { if ($0 ~ /;main\.siteA;.*unlockSlow /) a += $NF; else if ($0 ~ /;main\.siteB;.*unlockSlow /) b += $NF; next }
		$NF == "main.siteA" { ra = $(NF - 2) } $NF == "main.siteB" { rb = $(NF - 2) }
		END { if (a + b == 0 || ra + rb == 0) { print "none BAD"; exit }
			p = 100 * a / (a + b); q = 100 * ra / (ra + rb)
			printf "releases with waiters %d, the mutex profile'"'"'s %d (%.1f %%); site A share %.1f %%, its %.1f %%", a + b, ra + rb, 100 * (a + b) / (ra + rb), p, q
			print (p - q < 5 && q - p < 5 && a + b >= 0.9 * (ra + rb) && a + b <= 1.25 * (ra + rb)) ? " ok" : " BAD" }' "$T/$n.holders" "$T/$n.mtop")
	echo "# $n-holders: $r"
	case $r in
	*" ok") pass "$n-holders" ;;
	*) fail "$n-holders" "$r" ;;
	esac
	# RWMutex (Go 1.20+: its two semaphore functions): six readers, two
	# writers; each side's delay within 80-105 % of the time it measured
	# around RLock / Lock, the split within 5 pp of its; readers waiting
	# for a writer and writers waiting for the readers both seen; the
	# mutex label the RWMutex's address
	# Go 1.19: both wait in the Mutex's semaphore function (the label its
	# semaphore's address: the RWMutex + 12 or + 8, not compared)
	rfn=sync.runtime_SemacquireRWMutexR wfn=sync.runtime_SemacquireRWMutex
	[ $b = go ] && rfn=sync.runtime_SemacquireMutex wfn=sync.runtime_SemacquireMutex
	if :; then
		n=$b-rwmutex
		"$PMUPROF" record --locks --locks-max-rate 0 -o "$T/$n.pb.gz" -- "$d/locks-stripped" -rw 200 >"$T/$n.out" 2>"$T/$n.err"
		"$PMUPROF" report -i "$T/$n.pb.gz" --folded --sample-index delay 2>/dev/null >"$T/$n.delay"
		gotool tool pprof -tags -sample_index=contentions -ignore='runtime\.lock2' "$T/$n.pb.gz" 2>/dev/null |
			awk '/^ *[a-z]+: Total/ { k = $1 } k == "mutex:" && $NF ~ /^0x/ { print $NF }' >"$T/$n.mutex"
		r=$(awk -v out="$T/$n.out" -v mx="$(tr '\n' ' ' <"$T/$n.mutex")" -v rfn="$rfn" -v wfn="$wfn" -v b=$b '
			/(^|;)main\.reader;/ && index($0, ";" rfn " ") { rd += $NF }
			/(^|;)main\.writer;/ { wr += $NF } /(^|;)main\.writer;/ && index($0, ";" wfn " ") { wrr += $NF }
			END {
				while ((getline l < out) > 0) { split(l, f, " "); if (f[1] == "truth") w[f[2]] = f[5]; if (f[1] == "addr") a = f[3] }
				tr = w["main.reader"]; tw = w["main.writer"]
				printf "delay readers %.0f writers %.0f (for the readers %.0f) ns, measured %.0f %.0f, mutex %s(rw %s)", rd, wr, wrr, tr, tw, mx, a
				bad = (rd == 0 || wrr == 0 || tr == 0 || tw == 0)
				if (!bad) { p = 100 * rd / (rd + wr); q = 100 * tr / (tr + tw); printf ", readers share %.1f %%, measured %.1f %%", p, q
					bad = p - q > 5 || q - p > 5 || rd < 0.8 * tr || rd > 1.05 * tr || wr < 0.8 * tw || wr > 1.05 * tw || (b == "go" ? mx == "" : mx != a " ") }
				print bad ? " BAD" : " ok" }' "$T/$n.delay")
		echo "# $n: $r"
		case $r in
		*" ok") pass "$n" ;;
		*) fail "$n" "$r" ;;
		esac
	fi
	n=$b-attach
	"$d/locks" -delay 1s >"$T/$n.out" 2>&1 &
	p=$!
	sleep 0.3
	"$PMUPROF" record --locks --locks-max-rate 0 -p $p -o "$T/$n.pb.gz" 2>"$T/$n.err"
	wait $p
	judge $n "$T/$n.pb.gz" "$T/$n.out" "$T/$n.err"
done
exit 0
