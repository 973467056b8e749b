#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Behaviour changes on purpose only: the default profile (seed 1) and `model --json` of every
# built-in preset are compared with the golden files in tests/golden/, after dropping the fields
# that depend on the clock or the build (run.started_at, run.elapsed_s, tool.version). Values are
# compared exactly (JSON numbers round-trip through Python floats without loss).
#
# A change that moves a golden file is regenerated with
#   DISKGEO_GOLDEN_UPDATE=1 tests/test_golden.sh build/diskgeo
# and the commit says why the figures moved.
#
# Usage: tests/test_golden.sh DISKGEO_BINARY
set -u
dg=$(readlink -f "${1:?usage: test_golden.sh DISKGEO_BINARY}")
here=$(cd "$(dirname "$0")" && pwd)
gold="$here/golden"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d /tmp/diskgeo-golden.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

normalise()
{
	"$py" - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for path in (("run", "started_at"), ("run", "elapsed_s"), ("tool", "version")):
    node = doc
    for key in path[:-1]:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict):
        node.pop(path[-1], None)
with open(sys.argv[2], "w") as out:
    json.dump(doc, out, indent=1, sort_keys=True)
    out.write("\n")
PY
}

fail=0
checked=0
presets=$("$dg" model --list | awk 'NF {print $1}')
[ -n "$presets" ] || { echo "test_golden: model --list printed no preset"; exit 1; }
for p in $presets; do
	for kind in profile model; do
		raw="$tmp/$p.$kind.raw.json"
		if [ "$kind" = profile ]; then
			"$dg" profile "sim:$p" --seed 1 --json "$raw" >/dev/null 2>"$tmp/err" || {
				echo "FAIL $p profile: exit $? ($(head -c 300 "$tmp/err"))"
				fail=1
				continue
			}
		else
			"$dg" model "$p" --json "$raw" >/dev/null 2>"$tmp/err" || {
				echo "FAIL $p model: exit $? ($(head -c 300 "$tmp/err"))"
				fail=1
				continue
			}
		fi
		normalise "$raw" "$tmp/$p.$kind.json" || { fail=1; continue; }
		want="$gold/$p.$kind.json"
		if [ "${DISKGEO_GOLDEN_UPDATE:-}" = 1 ]; then
			cp "$tmp/$p.$kind.json" "$want"
			echo "updated $want"
		elif [ ! -f "$want" ]; then
			echo "FAIL $p $kind: no golden file $want (DISKGEO_GOLDEN_UPDATE=1 makes it)"
			fail=1
		elif ! diff -u "$want" "$tmp/$p.$kind.json" >"$tmp/diff"; then
			echo "FAIL $p $kind: differs from $want:"
			head -n 40 "$tmp/diff"
			fail=1
		fi
		checked=$((checked + 1))
	done
done
if [ $fail = 0 ]; then
	echo "$checked passed, 0 failed"
else
	echo "test_golden: some outputs differ from tests/golden (see above)"
fi
exit $fail
