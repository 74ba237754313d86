# shellcheck shell=sh
# Sourced by the goroutine wall-clock tests (t810, t812, t813) after lib.sh.
#
#   wall_samples PB     the wall samples of profile PB (those with wall time),
#                       one a line, tab-separated: value, goroutine id, state,
#                       wait reason ("-" when none), then the functions of its
#                       stack, root first, ';'-separated (creator frames
#                       included, as pprof names them), then the label
#                       cpu_sample_age_ms of a running goroutine's ("-"
#                       when none), read with Go's own pprof (go tool
#                       pprof -raw)
#   wall_snaps FILE     the number of snapshots in the report FILE
#   wall_dropped FILE   the reads dropped (changed while read + bad stack bounds
#                       + moving) in FILE

wall_samples() {
	gotool tool pprof -raw "$1" 2>/dev/null | awk '
		function flush() {
			if (have && val > 0)
				S[++ns] = val "\t" gid "\t" st "\t" wr "\t" locs "\t" age
			have = 0
		}
		function lab(line, key,   m) {
			if (match(line, key ":\\[[^]]*\\]")) {
				m = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 3)
				return m
			}
			return ""
		}
		/^Samples:/ { part = 1; next }
		part == 1 && !col { for (i = 1; i <= NF; i++) if ($i ~ /^wall\//) col = i; next }
		/^Locations/ { flush(); part = 2; next }
		/^Mappings/ { part = 3; next }
		part == 1 && /^ *[0-9-]+( +[0-9-]+)*: / {
			flush()
			split($0, h, ":")
			k = split(h[1], v, " ")
			val = v[col] + 0
			locs = substr($0, index($0, ":") + 1)
			gid = "-"; st = "-"; wr = "-"; age = "-"; have = 1
			next
		}
		part == 1 && have {
			x = lab($0, "goroutine"); if (x != "") gid = x
			x = lab($0, "state"); if (x != "") st = x
			x = lab($0, "wait_reason"); if (x != "") wr = x
			x = lab($0, "cpu_sample_age_ms"); if (x != "") { split(x, y, " "); age = y[1] }
			next
		}
		part == 2 && /^ *[0-9]+: / {
			id = $1; sub(/:$/, "", id)
			# 0xADDR M=N FUNC FILE:LINE s=N, or 0xADDR [marker] ...
			f = $3 ~ /^M=/ ? $4 : $3
			L[id] = f
			next
		}
		part == 2 && NF >= 2 && id != "" { L[id] = $1 ";" L[id]; next } # an inlined caller line: outer
		END {
			for (i = 1; i <= ns; i++) {
				n = split(S[i], a, "\t")
				k = split(a[5], ids, " ")
				fr = ""
				for (j = k; j >= 1; j--) if (ids[j] != "") fr = fr (fr == "" ? "" : ";") L[ids[j]]
				printf "%s\t%s\t%s\t%s\t%s\t%s\n", a[1], a[2], a[3], a[4], fr, a[6]
			}
		}'
}

wall_snaps() { sed -n 's/.*--wall [0-9]* Hz: \([0-9]*\) snapshots.*/\1/p' "$1"; }
wall_dropped() {
	sed -n 's/.*dropped: \([0-9]*\) changed while read, \([0-9]*\) bad stack bounds ([^)]*), \([0-9]*\) moving.*/\1 \2 \3/p' "$1" |
		awk '{ print $1 + $2 + $3 }'
}
