#!/bin/sh
# san: no (the host-wide paths run under ASan in t950 and t951; here the churn, ~16 s more)
# pmuprof agent host-wide on a host where processes come and go: 24 fleet
# processes of 0.3 s each, one after another, beside a diffwork -ratio 3
# (main.varied 3/4 of the work, by its own count), with the state made
# anew at cuts as soon as a few processes have gone (PMUPROF_RENEW_SLACK=2:
# what a host starting a process a second does at 128).  Every interval
# file must be one process's alone, fleet's named (main.handle) whatever
# the renewals, diffwork's share right across them, no frame unresolved,
# and the state renewed at least once; each file's comments its own (the
# goroutines' samples counted in the interval, of that process).  ~12 s.
. "$(dirname "$0")/lib.sh"
need_perf
dw=$FIX/go126/diffwork
fl=$FIX/go126/fleet
need_file diffwork "$dw"
need_file fleet "$fl"
PMUPROF_RENEW_SLACK=2 "$PMUPROF" agent -v --exe diffwork --exe fleet -F 199 --interval 1 \
	--spool "$T/spool" --dir "$T/d" 2>"$T/err" &
agent=$!
sleep 0.5
"$dw" -ratio 3 -scale 5 >"$T/dw.out" &
dwp=$!
i=0
while [ $i -lt 24 ]; do
	"$fl" >/dev/null &
	p=$!
	sleep 0.3
	kill "$p"
	wait "$p" 2>/dev/null
	i=$((i + 1))
done
wait "$dwp"
sleep 2
kill -TERM "$agent"
wait "$agent"
check agent-exit test $? = 0
sed 's/^/# agent: /' "$T/err" | tail -5
: >"$T/dwf"
nf=0 named=0 mixed=0 over=
for f in "$T"/d/*.pb.gz; do
	[ -e "$f" ] || continue
	"$PMUPROF" report -i "$f" --folded >"$T/f" 2>/dev/null || continue
	case $(basename "$f") in
	diffwork-*)
		cat "$T/f" >>"$T/dwf"
		grep -q 'main\.handle' "$T/f" && mixed=$((mixed + 1))
		;;
	fleet-*)
		nf=$((nf + 1))
		grep -q 'main\.handle' "$T/f" && named=$((named + 1))
		grep -q 'main\.varied\|main\.steady' "$T/f" && mixed=$((mixed + 1))
		;;
	esac
	cat "$T/f" >>"$T/all"
	# its comments are its own: the goroutines' samples in the interval's
	# profile at most its samples (not the recording's, not every process's)
	"$PMUPROF" report -i "$f" >"$T/r" 2>/dev/null
	tot=$(sed -n 's/^# total samples: \([0-9]*\).*/\1/p' "$T/r")
	gs=$(sed -n 's/^# goroutines: \([0-9]*\) samples of goroutines.*/\1/p' "$T/r")
	[ -n "$tot" ] && [ "${gs:-0}" -le "$tot" ] || over="$over $(basename "$f"): ${gs:-?} of ${tot:-?}"
done
echo "# interval profiles whose goroutine count is over their samples:${over:- none}"
check comments-own test -z "$over"
echo "# fleet interval files: $nf, with main.handle: $named"
check fleet-processes test "$nf" -ge 12
# a 0.3 s process at 199 Hz on a busy host: most intervals of it hold handle samples
check fleet-named test $((named * 10)) -ge $((nf * 8))
check kept-apart test "$mixed" = 0
# unresolved frames: a bare address or [unknown]
bad=$(awk '{ n = $NF; t += n; if ($0 ~ /(^|;)(0x[0-9a-f]+|\[unknown\])(;| )/) b += n } END { printf "%d %d\n", b, t }' "$T/all")
echo "# unresolved samples, all samples: $bad"
check frames-resolved awk -v b="${bad% *}" -v t="${bad#* }" 'BEGIN { exit !(t > 0 && b * 100 <= t) }'
truth=$(sed -n 's/^diffwork steady=\([0-9]*\) varied=\([0-9]*\).*/\1 \2/p' "$T/dw.out")
want=$(echo "$truth" | awk '{ printf "%.1f", 100 * $2 / ($1 + $2) }')
got=$(awk '/main\.varied/ { v += $NF } /main\.steady/ { s += $NF } END { if (v + s) printf "%.1f", 100 * v / (v + s) }' "$T/dwf")
echo "# diffwork main.varied: ${got:-none} % of varied+steady (truth $want %)"
check diffwork-share awk -v g="${got:-0}" -v w="$want" 'BEGIN { d = g - w; exit !(g > 0 && d < 6 && d > -6) }'
last=$(find "$T/d" -name 'diffwork-*.pb.gz' | sort | tail -1)
renewed=$("$PMUPROF" report -i "$last" 2>/dev/null | sed -n 's/.*state renewed \([0-9]*\) times.*/\1/p')
echo "# renewed: ${renewed:-?} times"
check renewed test "${renewed:-0}" -ge 1
grep -E "(^|;)(0x[0-9a-f]+|\[unknown\])(;| )" "$T/all" | head -5 | sed "s/^/# unresolved: /"
