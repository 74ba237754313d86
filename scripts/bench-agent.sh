#!/bin/sh
# What pmuprof agent costs a host of Go processes (issue 31), side by side
# in one run: NPROC copies of tests/go/fleet (a small service's shape:
# a goroutine per request, hashing and allocating; CPU-bound, so that the
# agent's every cycle comes out of their throughput on this machine) run
# the whole time; rounds of SECS seconds alternate between the ways:
#   none       no profiler
#   agent      pmuprof agent at its defaults (every Go process, CPU at
#              19 Hz, 10 s intervals, --dir as the backend)
#   otel-ebpf  the OpenTelemetry eBPF profiler at its defaults (the whole
#              host, 20 Hz, 5 s intervals) pushing OTLP over gRPC to a sink
#              that drops it (scripts/otel-ebpf.sh builds both; in a mount
#              namespace of its own with tracefs mounted, which it needs)
# A profiler starts before its round (given 5 s more once it runs: the
# agent attached, the eBPF one's programs loaded), so that a round
# measures it running, not starting.  Prints per way the mean requests a second of all
# processes over its rounds (the ways' order reversed every other round), the ratio to none, and the profiler's own cost over its
# rounds: CPU (itself and its children, % of one core; the median), memory
# (the sum of their RSS, and of their PSS, which counts shared pages once;
# the maxima) and the CPU seconds it took to start (the median).
#
# Usage: scripts/bench-agent.sh [ROUNDS [SECS [NPROC]]]   (default 3, 30, 20)
#        AGENT_ARGS="--wall" scripts/bench-agent.sh ...    (other kinds)
#        WAYS="none otel-ebpf" OTEL_ARGS="-reporter-interval 10s" ...
#        (WAYS default: none agent, and otel-ebpf when it is built)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
secs=${2:-30}
nproc=${3:-20}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
fx=${PMUPROF_FIXTURES:-$top/tests/.work}/go126/fleet
d=$(mktemp -d /tmp/pmuprof-bench-agent.XXXXXX)
pids='' agent='' sink=''
cleanup() {
	[ -n "$agent" ] && kill "$agent" 2>/dev/null
	[ -n "$sink" ] && kill "$sink" 2>/dev/null
	# shellcheck disable=SC2086 # a list of pids
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT
[ -x "$PMUPROF" ] || { echo "bench-agent: $PMUPROF missing: run make first" >&2; exit 1; }
if [ -z "${WAYS:-}" ]; then
	WAYS="none agent"
	"$top/scripts/otel-ebpf.sh" -c >/dev/null 2>&1 && WAYS="$WAYS otel-ebpf"
fi
case " $WAYS " in
*" otel-ebpf "*)
	otel=$("$top/scripts/otel-ebpf.sh") || exit 1
	otel_bin=$(echo "$otel" | sed -n 1p)
	sink_bin=$(echo "$otel" | sed -n 2p)
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# the backend: up the whole run, idle but in the otel-ebpf rounds
	"$sink_bin" "127.0.0.1:$port" >"$d/sink.out" 2>"$d/sink.err" &
	sink=$!
	;;
esac
sh "$top/scripts/fixtures.sh" >&2 || exit 1

i=0
while [ $i -lt "$nproc" ]; do
	"$fx" >"$d/ops.$i" &
	pids="$pids $!"
	i=$((i + 1))
done
sleep 1

# the requests done so far by every process
total_ops() {
	# shellcheck disable=SC2086
	kill -USR1 $pids
	sleep 0.3
	for i in $(seq 0 $((nproc - 1))); do tail -1 "$d/ops.$i"; done | awk '{ s += $2 } END { print s }'
}
# the profiler's processes: itself and its children
agent_pids() { echo "$agent $(pgrep -P "$agent" | tr '\n' ' ')"; }
# their CPU time (ticks), RSS and PSS (KiB)
agent_cost() {
	for p in $(agent_pids); do
		cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null | awk '{ printf "cpu %d\n", $1 + $2 }'
		awk '/^Rss:/ { printf "rss %d\n", $2 } /^Pss:/ { printf "pss %d\n", $2 }' \
			"/proc/$p/smaps_rollup" 2>/dev/null
	done | awk '{ s[$1] += $2 } END { printf "%d %d %d\n", s["cpu"], s["rss"], s["pss"] }'
}
# wait_log FILE TEXT SECS: true once FILE holds TEXT, false when the
# profiler exited or SECS passed
wait_log() {
	_n=$(($3 * 5))
	while [ $_n -gt 0 ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$agent" 2>/dev/null || return 1
		sleep 0.2
		_n=$((_n - 1))
	done
	return 1
}
# start_way WAY: start its profiler ($agent), true once it runs
start_way() {
	case $1 in
	agent)
		# shellcheck disable=SC2086 # extra options, split on purpose
		"$PMUPROF" agent --spool "$d/spool" --dir "$d/out" ${AGENT_ARGS:-} 2>>"$d/agent.err" &
		agent=$!
		sleep 5 # discovered, attached, a first interval under way
		;;
	otel-ebpf)
		# tracefs in a mount namespace of its own; exec: the same pid
		# shellcheck disable=SC2016,SC2086 # $0 $@ for sh -c; extra options
		unshare -m --propagation private sh -c \
			'mount -t tracefs nodev /sys/kernel/tracing && exec "$0" "$@"' \
			"$otel_bin" -collection-agent "127.0.0.1:$port" -disable-tls ${OTEL_ARGS:-} \
			>"$d/otel.log" 2>&1 &
		agent=$!
		# its eBPF programs load in seconds to tens of seconds
		wait_log "$d/otel.log" 'Attached sched monitor' 180 || {
			echo "bench-agent: otel-ebpf did not start: $(tail -1 "$d/otel.log")" >&2
			exit 1
		}
		cat "$d/otel.log" >>"$d/otel.err"
		sleep 5
		;;
	*)
		echo "bench-agent: no way $1 (none agent otel-ebpf)" >&2
		exit 1
		;;
	esac
	kill -0 "$agent" 2>/dev/null || {
		echo "bench-agent: $1 exited" >&2
		exit 1
	}
}

hz=$(getconf CLK_TCK)
echo "# $nproc x fleet, $rounds rounds of $secs s a way ($WAYS), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	# the ways forward in odd rounds, backward in even ones: the fleet's
	# throughput drifts over a run (25 % in two minutes here, downward), and
	# a fixed order would charge the drift to the ways that come last
	order=$WAYS
	[ $((r % 2)) = 0 ] && order=$(echo "$WAYS" | tr ' ' '\n' | sed '1!G;h;$!d' | tr '\n' ' ')
	for way in $order; do
		if [ "$way" != none ]; then
			start_way "$way"
			c0=$(agent_cost)
		fi
		o0=$(total_ops)
		t0=$(date +%s%N)
		sleep "$secs"
		o1=$(total_ops)
		t1=$(date +%s%N)
		ops=$(echo "$o0 $o1 $t0 $t1" | awk '{ printf "%.0f", ($2 - $1) / (($4 - $3) / 1e9) }')
		if [ "$way" != none ]; then
			c1=$(agent_cost)
			echo "$way $c0 $c1 $t0 $t1 $hz" | awk '{ printf "%s %.3f %d %d %.2f\n", $1,
				($5 - $2) / $10 / (($9 - $8) / 1e9) * 100, $6, $7, $2 / $10 }' >>"$d/cost"
			kill "$agent"
			wait "$agent"
			agent=''
		fi
		echo "$way $ops" >>"$d/ops"
		echo "# round $r $way: $ops requests/s"
	done
done
# a way's requests a second: the mean of its rounds (with the order
# reversed every other round, a steady drift cancels out of it)
med() { awk -v w="$1" '$1 == w { t += $2; n++ } END { printf "%.0f\n", n ? t / n : 0 }' "$d/ops"; }
none=$(med none)
printf '%-10s %11s %6s %6s %6s %7s %7s %7s\n' way requests/s ratio 'CPU %' 'max %' 'RSS MB' 'PSS MB' 'start s'
for way in $WAYS; do
	ops=$(med "$way")
	if [ "$way" = none ]; then
		printf '%-10s %11s %6.3f\n' none "$none" 1
		continue
	fi
	start=$(awk -v w="$way" '$1 == w { print $5 }' "$d/cost" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	printf '%-10s %11s %6.3f ' "$way" "$ops" "$(echo "$ops $none" | awk '{ print $1 / $2 }')"
	awk -v w="$way" '$1 == w' "$d/cost" | sort -k2,2n | awk -v st="$start" '{ c[NR] = $2; if ($3 > rss) rss = $3; if ($4 > pss) pss = $4 }
	     END { printf "%6.2f %6.2f %7.1f %7.1f %7.2f\n", c[int((NR + 1) / 2)], c[NR], rss / 1024, pss / 1024, st }'
done
echo "# CPU: % of one core over its rounds (median, max); RSS, PSS: the maxima; start: CPU s until measured"
case " $WAYS " in
*" agent "*) echo "# agent's stderr: $(wc -l <"$d/agent.err") lines; intervals written: $(find "$d/out" -name '*.pb.gz' 2>/dev/null | wc -l)" ;;
esac
if [ -n "$sink" ]; then
	echo "# otel-ebpf: $(grep -c 'level=ERROR' "$d/otel.err") errors logged; the sink took $(awk '{ n++; p += $2; s += $3 } END { printf "%d exports, %d profiles, %d samples", n, p, s }' "$d/sink.out")," \
		"$(cut -d' ' -f14,15 "/proc/$sink/stat" | awk -v hz="$hz" '{ printf "%.2f", ($1 + $2) / hz }') CPU s"
fi
