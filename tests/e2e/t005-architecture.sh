#!/bin/sh
# san: no
# ARCHITECTURE.md stays true: every module of lib/ is named in its table
# with its folder, every module it names exists, every lib/*/*.c has its one
# header, and the layers hold: a file of lib/FOLDER/ includes headers of its
# own folder or of a folder of a lower layer only (the table "The layers").
. "$(dirname "$0")/lib.sh"
doc=$top/ARCHITECTURE.md
need_file doc "$doc"
# "| 3 | `events/` | ..." -> "events 3"
layers=$(sed -n 's/^| \([0-9]*\) | `\([a-z]*\)\/` |.*/\2 \1/p' "$doc")
rank() { printf '%s\n' "$layers" | awk -v f="$1" '$1 == f { print $2 }'; }
missing='' gone='' nohdr='' stray='' badfolder='' right=''
for c in "$top"/lib/*.c "$top"/lib/*.h; do
	[ -e "$c" ] && stray="$stray ${c#"$top"/}"
done
for c in "$top"/lib/*/*.c; do
	m=${c#"$top"/lib/}
	grep -q "^| \`$m\` |" "$doc" || missing="$missing $m"
	[ -f "${c%.c}.h" ] || nohdr="$nohdr $m"
done
for m in $(sed -n 's/^| `\([a-z]*\/[a-z0-9_-]*\.c\)` |.*/\1/p' "$doc"); do
	[ -f "$top/lib/$m" ] || gone="$gone $m"
done
for d in "$top"/lib/*/; do
	f=$(basename "$d")
	[ -n "$(rank "$f")" ] || badfolder="$badfolder $f/"
done
for c in "$top"/lib/*/*.[ch]; do
	f=$(basename "$(dirname "$c")")
	r=$(rank "$f")
	[ -n "$r" ] || continue
	for inc in $(sed -n 's/^#include "\([a-z]*\)\/[^"]*".*/\1/p' "$c"); do
		[ "$inc" = "$f" ] && continue
		ri=$(rank "$inc")
		if [ -z "$ri" ] || [ "$ri" -ge "$r" ]; then
			right="$right ${c#"$top"/lib/}->$inc/"
		fi
	done
done
if [ -z "$missing" ]; then pass every-module-named; else fail every-module-named "not in ARCHITECTURE.md:$missing"; fi
if [ -z "$gone" ]; then pass no-module-gone; else fail no-module-gone "named but not in lib/:$gone"; fi
if [ -z "$nohdr" ]; then pass one-header-each; else fail one-header-each "no header:$nohdr"; fi
if [ -z "$stray$badfolder" ]; then pass every-file-in-a-layer; else fail every-file-in-a-layer "outside a layer's folder:$stray$badfolder"; fi
if [ -z "$right" ]; then pass includes-only-leftward; else fail includes-only-leftward "includes a header of its own layer's sibling or of a higher layer:$right"; fi
