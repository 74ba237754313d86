#!/bin/sh
# The runtime's own locks under record --locks (issue 19): tests/go/locks
# -chan 16: sixteen goroutines send on one channel to four receivers,
# GOMAXPROCS 4, so the channel's lock (a runtime lock) is contended and
# its waiters sleep in runtime.lock2 (futexsleep up to Go 1.23, semasleep
# from 1.24: the probes are at that call and its return).  Go 1.19, 1.26
# and 1.27, stripped, launched; Go 1.26 attached too.
# Checks:
#   - the sleeps seen, with the waiter's goroutine stack through the
#     channel operation (main.sender;runtime.chansend1;...;runtime.lock2
#     and main.receiver;...chanrecv...): at least 10, a delay each;
#   - every such sample's "mutex" label: the lock's address on Go 1.19
#     (futexsleep's argument: the channel's, or another the goroutine took), "runtime" from Go 1.24 (semasleep's is a
#     duration: the lock is not known);
#   - with the runtime's own mutex profile on (rate 1, Go 1.26/1.27: it
#     records runtime-lock contention since Go 1.22) in the same run: it
#     saw runtime-lock contention too (a machine on which the channel does
#     not contend skips).
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
need_perf
need_file locks "$FIX/go126/locks-stripped"
need_cmd go "$GO"
need_tracefs

check() { # NAME PB OUT
	n=$1
	"$PMUPROF" report -i "$2" --folded --sample-index contentions 2>/dev/null >"$T/$n.contentions"
	"$PMUPROF" report -i "$2" --folded --sample-index delay 2>/dev/null >"$T/$n.delay"
	gotool tool pprof -tags -sample_index=contentions -focus='runtime\.lock2' "$2" 2>/dev/null |
		awk '/^ *[a-z]+: Total/ { k = $1 } k == "mutex:" && NF >= 3 && $0 !~ /Total/ { print $NF }' | sort -u >"$T/$n.mutex"
	r=$(awk -v mx="$(tr '\n' ' ' <"$T/$n.mutex")" -v b="$b" '
		FILENAME ~ /contentions$/ { if ($0 ~ /^main\.sender;runtime\.chansend1;.*;runtime\.lock2 / || $0 ~ /^main\.receiver;runtime\.chanrecv.*;runtime\.lock2 /) c += $NF; next }
		/^main\.(sender|receiver);.*runtime\.lock2 / { d += $NF; if ($NF <= 0) z++ }
		END {
			printf "runtime lock sleeps at channel operations %d, delay %.0f ns, labels %s", c, d, mx
			bad = c < 10 || d <= 0 || z
			if (b == "go") bad = bad || mx !~ /^(0x[0-9a-f]+ )+$/
			else bad = bad || mx != "runtime "
			print bad ? " BAD" : " ok" }' "$T/$n.contentions" "$T/$n.delay")
	echo "# $n: $r"
	case $r in
	*" ok") pass "$n" ;;
	*) fail "$n" "$r $(head -2 "$T/$n.err" | tr '\n' '|')" ;;
	esac
}

for b in go126 go go127; do
	d=$FIX/$b
	if [ ! -x "$d/locks-stripped" ]; then
		skip "$b" "no $d/locks-stripped (scripts/fixtures.sh builds it when the toolchain is there)"
		continue
	fi
	n=$b-launch
	rate=
	[ $b = go ] || rate="-rate 1 -prof $T/$n.mutex.pb.gz"
	# shellcheck disable=SC2086
	"$PMUPROF" record --locks -o "$T/$n.pb.gz" -- "$d/locks-stripped" -chan 16 -n 100 $rate >"$T/$n.out" 2>"$T/$n.err"
	if [ -n "$rate" ] && ! gotool tool pprof -traces "$T/$n.mutex.pb.gz" 2>/dev/null | grep -q 'runtime\.unlock\|_LostContendedRuntimeLock'; then
		skip "$n" "the runtime's mutex profile saw no runtime-lock contention: the channel did not contend here"
		continue
	fi
	check $n "$T/$n.pb.gz"
	if [ $b = go126 ]; then
		n=$b-attach
		"$d/locks" -chan 16 -n 100 -delay 1s >"$T/$n.out" 2>&1 &
		p=$!
		sleep 0.3
		"$PMUPROF" record --locks -p $p -o "$T/$n.pb.gz" 2>"$T/$n.err"
		wait $p
		check $n "$T/$n.pb.gz"
	fi
done
exit 0
