# shellcheck shell=sh disable=SC2034,SC2154
# (sourced after lib.sh, and after lib-server.sh where a test uses both: its
# exit trap replaces theirs and does their work too)
# Real profiling backends for the agent's tests (issue 31), built by
# scripts/backends.sh and run on free 127.0.0.1 ports with their state in $T:
# an OpenTelemetry Collector (OTLP profiles over HTTP, written as JSON lines
# by its file exporter) and Grafana Pyroscope (pprof on /ingest, read back
# through its query API).  Each server is killed at exit.
#
#   need_backend NAME        otelcol or pyroscope: build it when it is not
#                            (minutes, once per machine); skip the whole
#                            script (exit 0) when it cannot be built, or when
#                            PMUPROF_BACKENDS=cached and it is not built yet
#   free_port                a TCP port free on 127.0.0.1 now
#
#   otelcol_start [PORT]     start the collector (otlp http receiver on PORT,
#                            else a free one -> file exporter); wait until it
#                            answers.  Sets otel_url (http://127.0.0.1:PORT),
#                            otel_endpoint ($otel_url/v1development/profiles),
#                            otel_port, otel_out (the JSON lines), otel_pid;
#                            false with $why.  Its log: $T/otelcol.log
#   otelcol_stop [-9]        stop it (SIGTERM and wait; -9: SIGKILL, as an
#                            outage).  A restart on $otel_port appends to
#                            the same $otel_out
#   otelcol_wait N SECS      true once the collector wrote N profiles
#   otlp_count               the number of profiles written so far
#   otlp_read WHAT [KEY=VALUE...]
#                            what the collector received, by the profiles whose
#                            resource has every KEY=VALUE (backend-read.py):
#       profiles   one line a profile, tab-separated: sample type/unit, period
#                  type/unit, period, samples, sum of values, resource key=value...
#       folded     "root;...;leaf SUM", as `pmuprof report --folded`
#       leaf       "SUM<TAB>function" by leaf function, largest first
#       attr:KEY   "SUM<TAB>value" by the sample attribute KEY ("-": none)
#
#   pyro_start [PORT]        start Pyroscope (single binary, filesystem
#                            storage in $T); wait for /ready.  Sets pyro_url,
#                            pyro_port, pyro_pid; false with $why.  Log:
#                            $T/pyroscope.log
#   pyro_stop [-9]
#   pyro_types [SELECTOR]    the profile types it holds, one a line
#                            (process_cpu:cpu:nanoseconds:cpu:nanoseconds)
#   pyro_labels NAME [SELECTOR]   the values of label NAME, one a line
#   pyro_read WHAT TYPE SELECTOR  folded or leaf (as otlp_read) of the merged
#                            profile of TYPE over the last hour, SELECTOR a
#                            label selector: '{service_name="APP"}'
#   pyro_wait TYPE SELECTOR SECS  true once that query holds a sample
_bk_lib=$(dirname "$0")
_bk_read=$_bk_lib/backend-read.py
# Debian's python3 (scripts/deps.sh): a python3 shim first on PATH (pyenv)
# costs ~2 s a call, and the waits call it 5 times a second
_bk_py=/usr/bin/python3
[ -x "$_bk_py" ] || _bk_py=python3
otel_pid='' pyro_pid=''
trap '_bk_kill -9; for p in ${_bg:-}; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT

_bk_kill() {
	[ -z "$otel_pid" ] || otelcol_stop "$@"
	[ -z "$pyro_pid" ] || pyro_stop "$@"
}

need_backend() {
	_o=
	[ "${PMUPROF_BACKENDS:-}" != cached ] || _o=-c
	if ! _b=$("$top/scripts/backends.sh" $_o "$1" 2>"$T/backend-$1.err"); then
		skip "$1" "no $1 backend: $(tail -1 "$T/backend-$1.err")"
		exit 0
	fi
	case $1 in
	otelcol) otel_bin=$_b ;;
	pyroscope) pyro_bin=$_b ;;
	esac
}

free_port() {
	"$_bk_py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# _bk_up NAME PID LOG SECS CMD...: true once CMD succeeds, within SECS, while PID lives
_bk_up() {
	_n=$(($4 * 5)) _name=$1 _pid=$2 _log=$3
	shift 4
	while [ $_n -gt 0 ]; do
		"$@" && return 0
		if ! kill -0 "$_pid" 2>/dev/null; then
			why="$_name exited: $(grep -i 'error' "$_log" | tail -2 | tr '\n' '|')"
			return 1
		fi
		sleep 0.2
		_n=$((_n - 1))
	done
	why="$_name not ready in ${4}s: $(tail -2 "$_log" | tr '\n' '|')"
	return 1
}

# any HTTP answer: the receiver starts after the exporters, last
_otel_answers() { [ "$(curl -s -o /dev/null -m 1 -w '%{http_code}' "$otel_endpoint")" != 000 ]; }

otelcol_start() {
	otel_port=${1:-$(free_port)}
	otel_url=http://127.0.0.1:$otel_port
	otel_endpoint=$otel_url/v1development/profiles
	otel_out=$T/otelcol-received.jsonl
	# no own telemetry server: it would take a fixed port (8888)
	cat >"$T/otelcol.yaml" <<EOF
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$otel_port
exporters:
  file:
    path: $otel_out
    format: json
    append: true
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
EOF
	"$otel_bin" --config "$T/otelcol.yaml" --feature-gates=service.profilesSupport >>"$T/otelcol.log" 2>&1 &
	otel_pid=$!
	_bk_up otelcol "$otel_pid" "$T/otelcol.log" 30 _otel_answers
}

otelcol_stop() {
	[ -n "$otel_pid" ] || return 0
	if [ "${1:-}" = -9 ]; then kill -9 "$otel_pid"; else kill "$otel_pid"; fi 2>/dev/null
	wait "$otel_pid" 2>/dev/null
	otel_pid=
}

otlp_count() {
	[ -s "$otel_out" ] || { echo 0; return; }
	_c=$("$_bk_py" "$_bk_read" otlp "$otel_out" profiles) || return 1
	[ -z "$_c" ] && echo 0 || echo "$_c" | wc -l
}

otelcol_wait() {
	_n=$(($2 * 5))
	while _c=$(otlp_count) && [ "$_c" -lt "$1" ]; do
		[ $_n -gt 0 ] || return 1
		sleep 0.2
		_n=$((_n - 1))
	done
}

otlp_read() {
	_w=$1
	shift
	[ -s "$otel_out" ] || return 0
	"$_bk_py" "$_bk_read" otlp "$otel_out" "$_w" "$@"
}

_pyro_ready() { curl -sf -o /dev/null -m 1 "$pyro_url/ready"; }

pyro_start() {
	pyro_port=${1:-$(free_port)}
	pyro_url=http://127.0.0.1:$pyro_port
	_d=$T/pyroscope _m=$(free_port)
	mkdir -p "$_d"
	# every listener and ring address on 127.0.0.1 (the flags of Pyroscope's
	# own integration tests), all state in $T, no usage report, no tracing,
	# no push of its own profiles; ready and stopped without the 15 s waits
	# meant for a rolling update
	(cd "$_d" && exec "$pyro_bin" -target=all \
		-server.http-listen-address=127.0.0.1 -server.http-listen-port="$pyro_port" \
		-server.grpc-listen-address=127.0.0.1 -server.grpc-listen-port="$(free_port)" \
		-memberlist.bind-addr=127.0.0.1 -memberlist.bind-port="$_m" \
		-memberlist.advertise-addr=127.0.0.1 -memberlist.advertise-port="$_m" \
		-compactor.ring.instance-addr=127.0.0.1 -distributor.ring.instance-addr=127.0.0.1 \
		-ingester.lifecycler.addr=127.0.0.1 -overrides-exporter.ring.instance-addr=127.0.0.1 \
		-query-frontend.instance-addr=127.0.0.1 -query-scheduler.ring.instance-addr=127.0.0.1 \
		-store-gateway.sharding-ring.instance-addr=127.0.0.1 \
		-usage-stats.enabled=false -self-profiling.disable-push=true -tracing.enabled=false \
		-ingester.min-ready-duration=0s -ingester.final-sleep=0s \
		-storage.backend=filesystem -storage.filesystem.dir="$_d/shared" \
		-pyroscopedb.data-path="$_d/data" -compactor.data-dir="$_d/compactor" \
		-blocks-storage.bucket-store.sync-dir="$_d/sync" >>"$T/pyroscope.log" 2>&1) &
	pyro_pid=$!
	_bk_up pyroscope "$pyro_pid" "$T/pyroscope.log" 60 _pyro_ready
}

pyro_stop() {
	[ -n "$pyro_pid" ] || return 0
	if [ "${1:-}" = -9 ]; then kill -9 "$pyro_pid"; else kill "$pyro_pid"; fi 2>/dev/null
	wait "$pyro_pid" 2>/dev/null
	pyro_pid=
}

# _pyro_api METHOD JSON: one call of Pyroscope's query API (Connect, JSON)
_pyro_api() {
	curl -sf -m 20 -H 'Content-Type: application/json' -d "$2" "$pyro_url/querier.v1.QuerierService/$1"
}

# the last hour, to a minute ahead, in ms
_pyro_window() {
	"$_bk_py" -c 'import time; n = int(time.time() * 1000); print("\"start\": %d, \"end\": %d" % (n - 3600000, n + 60000))'
}

# the profile types of the series SELECTOR matches (ProfileTypes takes no selector)
pyro_types() { pyro_labels __profile_type__ "${1:-}"; }

pyro_labels() {
	_s=
	[ -z "${2:-}" ] || _s=$(_bk_json "$2")
	_pyro_api LabelValues "{\"name\": \"$1\", \"matchers\": [$_s], $(_pyro_window)}" |
		"$_bk_py" -c 'import json, sys
for n in json.load(sys.stdin).get("names", []): print(n)'
}

# _bk_json TEXT: TEXT as a JSON string
_bk_json() { "$_bk_py" -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }

pyro_read() {
	_pyro_api SelectMergeProfile "{\"profileTypeID\": \"$2\", \"labelSelector\": $(_bk_json "$3"), $(_pyro_window)}" |
		"$_bk_py" "$_bk_read" pprof-json "$1"
}

pyro_wait() {
	_n=$(($3 * 5))
	while [ -z "$(pyro_read leaf "$1" "$2" 2>/dev/null)" ]; do
		[ $_n -gt 0 ] || return 1
		sleep 0.2
		_n=$((_n - 1))
	done
}
