#!/bin/sh
# Write a synthetic JavaScript project for esbuild to bundle: DIR/m<i>.js for
# i < MODULES, each with FUNCS functions and importing up to 3 other modules,
# and DIR/index.js importing them all.  Used by tests/e2e/t302 and
# scripts/bench.sh as a real-Go-program workload.
# Usage: scripts/gen-js.sh DIR MODULES FUNCS
set -e
[ $# -eq 3 ] || { echo "usage: $0 DIR MODULES FUNCS" >&2; exit 2; }
mkdir -p "$1"
awk -v d="$1" -v n="$2" -v f="$3" 'BEGIN {
for (m = 0; m < n; m++) {
	file = d "/m" m ".js"
	for (j = 1; j <= 3; j++) { t = (m * 7 + j * 13) % n; if (t > m) printf "import { f%d_0 as i%d } from \"./m%d.js\";\n", t, j, t > file }
	for (k = 0; k < f; k++) {
		printf "export function f%d_%d(a, b) {\n  const o = { key%d: a + %d, name: \"s%d_%d\", list: [a, b, %d] };\n", m, k, k, k, m, k, k > file
		printf "  let s = 0;\n  for (let i = 0; i < o.list.length; i++) { s += o.list[i] * %d + (b ? b.length : 0); }\n", k + 1 > file
		printf "  if (s > %d) { return class C%d_%d { constructor(x) { this.x = x; } get v() { return this.x * s; } }; }\n", k * 3, m, k > file
		printf "  return `t${o.name}-${s}` + JSON.stringify(o);\n}\n" > file
	}
	printf "export const all%d = [", m > file
	for (k = 0; k < f; k++) printf "f%d_%d, ", m, k > file
	print "];" > file
	close(file)
}
file = d "/index.js"
for (m = 0; m < n; m++) printf "import { all%d } from \"./m%d.js\";\n", m, m > file
printf "console.log([" > file
for (m = 0; m < n; m++) printf "all%d, ", m > file
print "].length);" > file
}'

