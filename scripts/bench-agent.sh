#!/bin/sh
# What pmuprof agent costs a host of Go processes (issue 31), side by side
# in one run: NPROC copies of tests/go/fleet (a small service's shape:
# a goroutine per request, hashing and allocating; CPU-bound, so that the
# agent's every cycle comes out of their throughput on this machine) run
# the whole time; rounds of SECS seconds alternate between no profiler and
# the agent at its defaults (every Go process, CPU at 19 Hz, 10 s
# intervals, --dir as the backend), started before its round so that a
# round measures it running, not starting.  Prints per way the median
# requests a second of all processes, the agent's ratio to none, and the
# agent's own cost over its rounds: CPU (itself and its children, % of one
# core) and memory (the sum of their RSS, and of their PSS, which counts
# shared pages once), the maxima over the rounds.
#
# Usage: scripts/bench-agent.sh [ROUNDS [SECS [NPROC]]]   (default 3, 30, 20)
#        AGENT_ARGS="--wall" scripts/bench-agent.sh ...    (other kinds)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
secs=${2:-30}
nproc=${3:-20}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
fx=${PMUPROF_FIXTURES:-$top/tests/.work}/go126/fleet
d=$(mktemp -d /tmp/pmuprof-bench-agent.XXXXXX)
pids='' agent=''
cleanup() {
	[ -n "$agent" ] && kill "$agent" 2>/dev/null
	# shellcheck disable=SC2086 # a list of pids
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT
[ -x "$PMUPROF" ] || { echo "bench-agent: $PMUPROF missing: run make first" >&2; exit 1; }
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
# the agent's processes: itself and its children
agent_pids() { echo "$agent $(pgrep -P "$agent" | tr '\n' ' ')"; }
# their CPU time (ticks), RSS and PSS (KiB)
agent_cost() {
	for p in $(agent_pids); do
		cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null | awk '{ printf "cpu %d\n", $1 + $2 }'
		awk '/^Rss:/ { printf "rss %d\n", $2 } /^Pss:/ { printf "pss %d\n", $2 }' \
			"/proc/$p/smaps_rollup" 2>/dev/null
	done | awk '{ s[$1] += $2 } END { printf "%d %d %d\n", s["cpu"], s["rss"], s["pss"] }'
}

hz=$(getconf CLK_TCK)
echo "# $nproc x fleet, $rounds rounds of $secs s a way, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	for way in none agent; do
		if [ $way = agent ]; then
			# shellcheck disable=SC2086 # extra options, split on purpose
			"$PMUPROF" agent --spool "$d/spool" --dir "$d/out" ${AGENT_ARGS:-} 2>"$d/agent.err" &
			agent=$!
			sleep 5 # discovered, attached, a first interval under way
			c0=$(agent_cost)
		fi
		o0=$(total_ops)
		t0=$(date +%s%N)
		sleep "$secs"
		o1=$(total_ops)
		t1=$(date +%s%N)
		ops=$(echo "$o0 $o1 $t0 $t1" | awk '{ printf "%.0f", ($2 - $1) / (($4 - $3) / 1e9) }')
		if [ $way = agent ]; then
			c1=$(agent_cost)
			echo "$c0 $c1 $t0 $t1 $hz" | awk '{ printf "cost %.3f %d %d\n", ($4 - $1) / $9 / (($8 - $7) / 1e9) * 100, $5, $6 }' >>"$d/cost"
			kill "$agent"
			wait "$agent"
			agent=''
		fi
		echo "$way $ops" >>"$d/ops"
		echo "# round $r $way: $ops requests/s"
	done
done
med() { awk -v w="$1" '$1 == w { print $2 }' "$d/ops" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
none=$(med none)
ag=$(med agent)
printf '%-8s %12s %8s\n' way requests/s ratio
printf '%-8s %12s %8s\n' none "$none" 1.000
printf '%-8s %12s %8.3f\n' agent "$ag" "$(echo "$ag $none" | awk '{ print $1 / $2 }')"
sort -k2,2n "$d/cost" | awk '{ c[NR] = $2; if ($3 > rss) rss = $3; if ($4 > pss) pss = $4 }
     END { printf "agent CPU: median %.2f %% of one core (max %.2f); memory: RSS sum %.1f MB, PSS sum %.1f MB (max)\n", c[int((NR + 1) / 2)], c[NR], rss / 1024, pss / 1024 }'
echo "# agent's stderr: $(wc -l <"$d/agent.err") lines; intervals written: $(find "$d/out" -name '*.pb.gz' 2>/dev/null | wc -l)"
