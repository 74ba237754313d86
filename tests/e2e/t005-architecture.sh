#!/bin/sh
# san: no
# ARCHITECTURE.md stays true: every module of lib/ is named in its table,
# every module it names exists, and every lib/*.c has its one header.
. "$(dirname "$0")/lib.sh"
doc=$top/ARCHITECTURE.md
need_file doc "$doc"
missing='' gone='' nohdr=''
for c in "$top"/lib/*.c; do
	m=$(basename "$c")
	grep -q "^| \`$m\` |" "$doc" || missing="$missing $m"
	[ -f "${c%.c}.h" ] || nohdr="$nohdr $m"
done
for m in $(sed -n 's/^| `\([a-z0-9_]*\.c\)` |.*/\1/p' "$doc"); do
	[ -f "$top/lib/$m" ] || gone="$gone $m"
done
if [ -z "$missing" ]; then pass every-module-named; else fail every-module-named "not in ARCHITECTURE.md:$missing"; fi
if [ -z "$gone" ]; then pass no-module-gone; else fail no-module-gone "named but not in lib/:$gone"; fi
if [ -z "$nohdr" ]; then pass one-header-each; else fail one-header-each "no header:$nohdr"; fi
