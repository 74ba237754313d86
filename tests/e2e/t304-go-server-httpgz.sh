#!/bin/sh
# san: no (a server under load for 2 windows; pmuprof attached under ASan is t5xx's and t803's)
# A net/http server built here with Go 1.26 (tests/go/httpgz: gzip'd
# responses, so that compression and the socket writes both cost;
# net/http/pprof imported) under wrk: pmuprof attached (record -e cpu-clock
# -F 997 -p PID --kernel, kernel frames folded into the Go frame that entered
# the kernel) against the server's own /debug/pprof/profile over the same
# 10 s window.  The total variation distance between the two flat profiles
# (scripts/pprof-distance.sh) must be at most runtime/pprof's own noise,
# the distance between two of its consecutive windows measured in the same
# run, plus 3 pp.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-server.sh"
need_perf
need_cmd wrk wrk curl
secs=${PMUPROF_SERVER_SECS:-10} # the window; 20 for the figures in docs/benchmarks.md
# one version for now (the loop is the place of the others)
# shellcheck disable=SC2043
for v in go126; do
	fx=$FIX/$v/httpgz
	if [ ! -x "$fx" ]; then
		skip "$v" "fixture missing: $fx (run scripts/fixtures.sh with Go 1.26 at /usr/local/go)"
		continue
	fi
	"$fx" -level 1 >"$T/$v.out" 2>"$T/$v.err" &
	spid=$!
	bg_pid $spid
	_w=0
	while ! grep -q '^listening ' "$T/$v.out" && [ $_w -lt 50 ]; do sleep 0.1; _w=$((_w + 1)); done
	base=http://$(awk '/^listening / { print $2 }' "$T/$v.out")
	if ! wait_http "$base/page?kb=1" 5; then
		fail "$v-start" "the server does not answer: $(head -2 "$T/$v.err" | tr '\n' '|')"
		continue
	fi
	wrk -t2 -c32 -d$((2 * secs + 6))s -H 'Accept-Encoding: gzip' "$base/page?kb=16" >"$T/$v.wrk" 2>&1 &
	bg_pid $!
	sleep 2
	if server_windows "$v-httpgz" $spid "$base" $secs; then
		check_distance "$v-httpgz"
		check_default "$v-httpgz"
		check_goids "$v-httpgz" $spid wrk -t2 -c32 -d4s -H 'Accept-Encoding: gzip' "$base/page?kb=16"
	else
		fail "$v-httpgz-distance" "$why"
	fi
	kill $spid 2>/dev/null
	wait 2>/dev/null
	echo "# wrk: $(grep -E 'Requests/sec' "$T/$v.wrk")"
done
exit 0
