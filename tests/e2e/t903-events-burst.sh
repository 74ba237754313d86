#!/bin/sh
# A burst of an event sampled every hit loses nothing: a uprobe -c 1 on
# main.(*counter).tick, which tests/go/burst calls 7 777 times in a tight
# loop (~70 MiB of samples with the 8 KiB stack copy in ~0.2 s), recorded
# in 100 separate runs, two at a time (each run and its drain then compete
# with the other pair: harder, and half the wall time): every run exactly
# as many samples as the fixture's own count, no lost record.  ~60-70 s on
# 2 loaded CPUs (10 runs under the ASan build, whose slower drain may lose:
# there every call must be a sample or counted lost).  The machine's load
# is printed: other work on it starves the drain, which the rings' room for
# bursts is for (perf/attach.c, burst_pages()).
. "$(dirname "$0")/lib.sh"
need_perf
fx=$GOFIX/burst
need_file burst "$fx"
if [ ! -r /sys/bus/event_source/devices/uprobe/type ]; then
	skip all "no uprobe PMU in this kernel"
	exit 0
fi
runs=50 # a lane
[ -n "$SAN" ] && runs=5
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
ev="uprobe:$fx:main.(*counter).tick"

# lane K: $runs recordings, one line each in $T/lane.K: "exact", "lossy
# N+L of TICKS" (counted: N samples, L lost) or "odd WHAT" (no count)
lane() {
	i=0
	while [ $i -lt $runs ]; do
		i=$((i + 1))
		"$PMUPROF" record -e "$ev" -c 1 -o "$T/p$1.pb.gz" -- "$fx" >"$T/o$1" 2>"$T/e$1"
		rc=$?
		ticks=$(sed -n 's/^ticks \([0-9][0-9]*\)$/\1/p' "$T/o$1")
		n=$(sample_count "$T/e$1")
		lost=$(sed -n 's/.* samples (\([0-9]*\) lost).*/\1/p' "$T/e$1")
		if [ $rc != 0 ] || [ "$ticks" != 7777 ] || [ -z "$n" ] || [ -z "$lost" ]; then
			echo "odd run $1.$i: rc $rc, '$(head -c 80 "$T/o$1")', $(head -1 "$T/e$1")"
		elif [ "$n" = "$ticks" ] && [ "$lost" = 0 ]; then
			echo exact
		else
			echo "lossy run $1.$i: $n+$lost of $ticks"
		fi
	done >"$T/lane.$1"
}
t0=$(now_ms)
lane 1 &
lane 2
wait
echo "# $((runs * 2)) runs in $((($(now_ms) - t0) / 1000)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$T/lane.1" "$T/lane.2" >"$T/all"
grep -v '^exact$' "$T/all" | sed 's/^/# /'
exact=$(grep -c '^exact$' "$T/all")
honest=$(awk '$1 == "exact" { n++ } $1 == "lossy" { split($4, a, "+"); if (a[1] + a[2] == $6) n++ } END { print n + 0 }' "$T/all")
if [ "$honest" = $((runs * 2)) ]; then
	pass burst-accounted
else
	fail burst-accounted "$honest of $((runs * 2)) runs with every call a sample or counted lost"
fi
if [ -n "$SAN" ]; then
	echo "# ASan build: $exact of $((runs * 2)) runs without loss (not required there)"
elif [ "$exact" = $((runs * 2)) ]; then
	pass burst-exact
else
	fail burst-exact "$exact of $((runs * 2)) runs with exactly 7777 samples and none lost"
fi

# and the samples are the calls: tick the leaf of each
"$PMUPROF" record -e "$ev" -c 1 -o "$T/p.pb.gz" -- "$fx" >"$T/o" 2>"$T/e"
n=$(sample_count "$T/e")
"$PMUPROF" report -i "$T/p.pb.gz" --folded >"$T/f" 2>/dev/null
leaf=$(awk '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); if (fr[k] == "main.(*counter).tick") s += $NF } END { print s + 0 }' "$T/f")
if [ -n "$n" ] && [ "$leaf" = "$n" ] && [ "$(folded_total "$T/f")" = "$n" ]; then
	pass burst-leaf
else
	fail burst-leaf "$leaf of $(folded_total "$T/f") samples with tick as the leaf, ${n:-?} recorded"
fi
