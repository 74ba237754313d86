#!/bin/sh
# Re-bless the golden outputs of the committed captures (tests/fixtures/*.data):
# each tests/fixtures/NAME.folded is `pmuprof report --all-frames -i NAME.data --folded`.
# With --record, first record the captures again (needs perf_event_open and
# the Go fixtures of scripts/fixtures.sh):
#   shares.data   pmuprof record -e cpu-clock -F 250 --no-creators --raw
#                 of /tmp/pmuprof-golden/go/shares (Go 1.19, built by
#                 scripts/fixtures.sh at that fixed path so its build ID is the
#                 same on every machine)
# Review the diff before committing: a changed .folded means the unwinder or
# the symbolizer now says something else about the same bytes.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
P=${PMUPROF:-$top/build/pmuprof}
fix=$top/tests/fixtures
GOLDEN=${PMUPROF_GOLDEN:-/tmp/pmuprof-golden}/go
if [ "${1:-}" = --record ]; then
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	"$P" record -q -e cpu-clock -F 250 --no-creators -o "$t/shares.pb.gz" \
		--raw "$fix/shares.data" -- "$GOLDEN/shares"
	/usr/lib/go-1.19/bin/go tool buildid "$GOLDEN/shares" >"$fix/shares.buildid"
fi
for c in "$fix"/*.data; do
	n=${c%.data}
	"$P" report --all-frames -i "$c" --folded >"$n.folded.new"
	mv "$n.folded.new" "$n.folded"
	echo "blessed ${n#$top/}.folded ($(wc -l <"$n.folded") stacks)"
done
