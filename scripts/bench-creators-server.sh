#!/bin/sh
# What --creators costs a real Go server under load, side by side in one
# run: Debian's caddy (Go 1.19) answering a fixed string, loaded by wrk
# with "Connection: close" (a goroutine per connection, thousands a second),
# in rounds that alternate
#
#   none                 no profiler
#   record               pmuprof record -F 997 -p PID (CPU, no creators)
#   record --creators    pmuprof record -F 997 --creators -p PID (the creation probe)
#   record --creators (before)   the same with $PMUPROF_BEFORE, when set (an
#                        older build, to compare two builds in one run)
#
# and prints, per way, the median requests/s and p99 latency (wrk), the
# ratio to none, the server's CPU per request (user + system of its
# process, /proc/PID/stat, over the load), pmuprof's own CPU (user + system,
# /usr/bin/time) as a share of one core, and the goroutines created per
# second (the probe's count, over pmuprof's whole run).
#
# Usage: scripts/bench-creators-server.sh [ROUNDS] [SECONDS]   (default 3
# rounds of 10 s).  Needs root and a built pmuprof; installs wrk and caddy
# (Debian packages) when missing, and mounts tracefs for the probe.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
secs=${2:-10}
PMUPROF=${PMUPROF:-$top/build/pmuprof}
[ -x "$PMUPROF" ] || { echo "bench-creators-server: $PMUPROF missing: run make first" >&2; exit 1; }
if ! command -v wrk >/dev/null || ! command -v caddy >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y wrk caddy >&2 || exit 1
	systemctl disable --now caddy >/dev/null 2>&1
fi
mounted=
if [ ! -d /sys/kernel/tracing/events ] && mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
	mounted=/sys/kernel/tracing
fi
d=$(mktemp -d /tmp/pmuprof-bench-server.XXXXXX)
printf ':18080 {\n\trespond "hello"\n}\n' >"$d/Caddyfile"
HOME=$d XDG_DATA_HOME=$d XDG_CONFIG_HOME=$d caddy run --config "$d/Caddyfile" --adapter caddyfile >"$d/caddy.log" 2>&1 &
cpid=$!
trap 'kill $cpid 2>/dev/null; rm -rf "$d"; [ -n "$mounted" ] && umount "$mounted"' EXIT
for _ in $(seq 50); do
	wrk -t1 -c1 -d1s http://127.0.0.1:18080/ >/dev/null 2>&1 && break
	sleep 0.2
done
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' /proc/$cpid/stat; }
load() { # -> "rps p99ms server-us-per-request"
	t0=$(ticks)
	wrk -t2 -c32 -d"${secs}s" --latency -H 'Connection: close' http://127.0.0.1:18080/ >"$d/wrk" 2>&1
	rps=$(awk '/^Requests\/sec/ { print $2 }' "$d/wrk")
	p99=$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 } else if (v ~ /ms$/) sub(/ms/, "", v); else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 }; print v }' "$d/wrk")
	us=$(awk -v a="$t0" -v b="$(ticks)" -v r="$rps" -v s="$secs" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.0f", (r > 0 ? 1e6 * (b - a) / hz / (r * s) : 0) }')
	echo "${rps:-0} ${p99:-0} $us"
}
way() { # NAME PMUPROF PMUPROF-ARGS...
	n=$1
	pm=$2
	shift 2
	if [ "$n" = none ]; then
		echo "none $(load) 0 0"
		return
	fi
	/usr/bin/time -f '%U %S' -o "$d/time" "$pm" record -q -e cpu-clock -F 997 "$@" -p $cpid \
		--duration $((secs + 2)) -o "$d/p.pb.gz" 2>"$d/err" &
	rp=$!
	sleep 1
	r=$(load)
	wait $rp
	cpu=$(awk -v s=$((secs + 2)) '{ printf "%.1f", 100 * ($1 + $2) / s }' "$d/time")
	made=$(gzip -dc "$d/p.pb.gz" | strings | sed -n 's/.*creators: \([0-9]*\) goroutine creations seen.*/\1/p' | head -1)
	echo "$n $r $cpu $(awk -v m="${made:-0}" -v s=$((secs + 2)) 'BEGIN { printf "%.0f", m / s }')"
}
ways="none record record--creators"
[ -n "${PMUPROF_BEFORE:-}" ] && ways="$ways record--creators(before)"
for r in $(seq "$rounds"); do
	way none -
	way record "$PMUPROF"
	way record--creators "$PMUPROF" --creators
	[ -n "${PMUPROF_BEFORE:-}" ] && way 'record--creators(before)' "$PMUPROF_BEFORE" --creators
done >"$d/res"
med() { awk -v w="$1" -v c="$2" '$1 == w { print $c }' "$d/res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(med none 2)
ubase=$(med none 4)
echo "| way | requests/s (median of $rounds x ${secs} s) | vs none | p99 ms | server CPU µs/request | vs none | pmuprof CPU, % of a core | goroutines created/s |"
echo "|---|---|---|---|---|---|---|---|"
for w in $ways; do
	m=$(med "$w" 2)
	u=$(med "$w" 4)
	echo "| $(echo "$w" | sed 's/--/ --/; s/(/ (/') | $m | $(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.3f", a / b }') | $(med "$w" 3) | $u | $(awk -v a="$u" -v b="$ubase" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') | $(med "$w" 5) | $(med "$w" 6) |"
done
