#!/bin/sh
# A target's own strings cannot drive the user's terminal: a Go program at a
# path (so a comm) holding escape bytes, whose function name in the binary
# (patched, same length) and pprof label hold ESC and C1 bytes.  Nothing
# pmuprof writes as text (stderr lines, report's table, --folded, the HTML
# page) holds an ESC, a raw C1 byte or U+009B; the names are there, with
# '?' for what was unsafe; the pprof file keeps the label's bytes as the
# program set them, less what a terminal would act on ('?').
. "$(dirname "$0")/lib.sh"

need_file hostnames "$FIX/go126/hostnames-stripped"
esc=$(printf '\033')
dir="$T/d${esc}[2J"
bin="$dir/st${esc}[31mX"
mkdir -p "$dir"
# main.spinXXXXXXXXXXXX -> main.spin ESC [31m XXXXXXX, in gopclntab (and any symbol table)
perl -pe 's/spinXXXXXXXXXXXX/spin\e[31mXXXXXXX/g' "$FIX/go126/hostnames-stripped" >"$bin"
chmod +x "$bin"

# clean FILE: no ESC, no raw C1 byte (0x80-0x9f outside UTF-8), no U+0080-U+009F
clean() {
	LC_ALL=C perl -ne 'BEGIN{$bad=0} $bad++ if /\e/ || /\xc2[\x80-\x9f]/;
		s/[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}//g;
		$bad++ if /[\x80-\x9f]/; END{exit($bad ? 1 : 0)}' "$1"
}
ok_clean() { # NAME FILE: clean and not empty
	if [ ! -s "$2" ]; then
		fail "$1" "nothing written"
	elif clean "$2"; then
		pass "$1"
	else
		fail "$1" "raw escape bytes: $(cat -v "$2" | grep -m1 '\^\[\|M-')"
	fi
}

# launched: the warnings and summary lines
"$PMUPROF" record -F 499 -o "$T/l.pb.gz" -- "$bin" 1s >"$T/l.out" 2>"$T/l.err"
check launch-rc test -s "$T/l.pb.gz"
ok_clean launch-stderr "$T/l.err"

# an error that echoes the binary's path
"$PMUPROF" record -o "$T/e.pb.gz" -e "uprobe:$bin:main.nosuch" -- "$bin" 1s >/dev/null 2>"$T/e.err"
ok_clean error-path-stderr "$T/e.err"
check error-path-named grep -q 'd?\[2J/st?\[31mX' "$T/e.err"

# attached: "attached to PID N (comm)"
"$bin" 3s >"$T/a.out" &
tp=$!
sleep 0.3
"$PMUPROF" record -F 499 -p "$tp" --duration 1 -o "$T/a.pb.gz" >/dev/null 2>"$T/a.err"
wait "$tp"
ok_clean attach-stderr "$T/a.err"
check attach-comm-named grep -q "attached to PID $tp (st?\[31mX)" "$T/a.err"

# report: the table, folded stacks, the HTML page
"$PMUPROF" report -i "$T/l.pb.gz" >"$T/r.txt" 2>"$T/r.err"
ok_clean report-table "$T/r.txt"
check report-table-named grep -q 'main\.spin?\[31mXXXXXXX' "$T/r.txt"
"$PMUPROF" report -i "$T/l.pb.gz" --folded >"$T/f.txt" 2>>"$T/r.err"
ok_clean report-folded "$T/f.txt"
check report-folded-named grep -q 'main\.spin?\[31mXXXXXXX' "$T/f.txt"
"$PMUPROF" report -i "$T/l.pb.gz" --html "$T/p.html" 2>>"$T/r.err"
ok_clean report-html "$T/p.html"
echo "(end)" >>"$T/r.err" # not empty: ok_clean judges what was written
ok_clean report-stderr "$T/r.err"

# the label: in the profile too made safe for a terminal, as `go tool
# pprof -tags` prints labels as they are (ESC and the C1 byte as '?')
gotool tool pprof -tags "$T/l.pb.gz" >"$T/tags.txt" 2>/dev/null
ok_clean label-tags "$T/tags.txt"
check label-named grep -q 'a?\[31mb?c' "$T/tags.txt"
