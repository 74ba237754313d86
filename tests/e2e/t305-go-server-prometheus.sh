#!/bin/sh
# san: no (a server under load for 2 windows; pmuprof attached under ASan is t5xx's and t803's)
# Debian's prometheus (built by Debian with Go 1.19), scraping itself every
# second and answering PromQL range queries from wrk: pmuprof attached
# (record -e cpu-clock -F 997 -p PID --kernel, kernel frames folded into the
# Go frame that entered the kernel) against prometheus's own
# /debug/pprof/profile over the same 10 s window.  The total variation
# distance between the two flat profiles (scripts/pprof-distance.sh) must be
# at most runtime/pprof's own noise, the distance between two of its
# consecutive windows measured in the same run, plus 3 pp.  Skipped with the
# reason when prometheus is not installed or does not start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-server.sh"
need_perf
need_cmd wrk wrk curl
need_cmd prometheus prometheus
secs=${PMUPROF_SERVER_SECS:-10} # the window; 20 for the figures in docs/benchmarks.md
# a port of its own: another run of this test may hold one
port=$((20000 + $$ % 20000))
started=
for _ in 1 2 3 4 5; do
	# a port nothing answers on (curl: 7, connection refused)
	curl -s -o /dev/null -m 2 "http://127.0.0.1:$port/"
	if [ $? -ne 7 ]; then
		port=$((port + 1))
		continue
	fi
	cat >"$T/prom.yml" <<EOC
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: self
    static_configs:
      - targets: ['127.0.0.1:$port']
EOC
	prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/data" \
		--web.listen-address=127.0.0.1:$port --log.level=warn >"$T/prom.log" 2>&1 &
	spid=$!
	bg_pid $spid
	if wait_http "http://127.0.0.1:$port/-/ready" 15 && kill -0 $spid 2>/dev/null; then
		started=1
		break
	fi
	kill $spid 2>/dev/null
	wait $spid 2>/dev/null
	port=$((port + 1))
done
if [ -z "$started" ]; then
	skip all "prometheus does not start: $(tail -2 "$T/prom.log" | tr '\n' '|')"
	exit 0
fi
base=http://127.0.0.1:$port
# a few seconds of its own metrics to query
sleep 4
now=$(date +%s)
q='histogram_quantile(0.9%2C%20sum%20by%20(le%2C%20handler)%20(rate(prometheus_http_request_duration_seconds_bucket%5B5s%5D)))'
url="$base/api/v1/query_range?query=$q&start=$((now - 60))&end=$((now + 2 * secs + 30))&step=0.5"
if ! curl -sf -m 5 "$url" | grep -q '"status":"success"'; then
	fail prometheus-query "the range query fails: $(curl -s -m 5 "$url" | head -c 200)"
	exit 0
fi
wrk -t2 -c16 -d$((2 * secs + 6))s "$url" >"$T/wrk" 2>&1 &
bg_pid $!
sleep 2
if server_windows prometheus $spid "$base" $secs; then
	check_distance prometheus
	check_default prometheus
	check_goids prometheus $spid wrk -t2 -c16 -d4s "$url"
else
	fail prometheus-distance "$why"
fi
echo "# prometheus $(prometheus --version 2>&1 | head -1 | cut -d' ' -f3), wrk: $(grep -E 'Requests/sec' "$T/wrk")"
exit 0
