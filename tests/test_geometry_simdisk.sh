#!/bin/bash
# SPDX-License-Identifier: MIT
# diskgeo geometry end to end on diskgeo-simdisk (root, /dev/fuse, loop devices; exit 77
# without): hgst-7k1000 (512e, shown by the loop device as 512/512) served as a loop device in
# real time through io_uring; every place measured must have its spec zone's track size on
# every surface, and the surfaces (4) and layout (cylinder) must be right; at least one place
# must be measured. The host's latency (a FUSE round trip) is noise on every phase: places it
# spoils end with a note, never with a wrong size. Real time on a shared machine: tried three times.
# The budget: 150 s, of which the cache and NCQ tests take a fifth (30 s), the geometry the rest.
# Usage: test_geometry_simdisk.sh DISKGEO SIMDISK SOURCE_DIR/presets/hgst-7k1000.json
set -u

DG=${1:?usage: test_geometry_simdisk.sh DISKGEO SIMDISK PRESET_JSON}
SD=${2:?}
PRESET=${3:?}
if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ] || [ ! -e /dev/loop-control ]; then
	echo "test_geometry_simdisk: needs root, /dev/fuse and loop devices; skipped"
	exit 77
fi
T=$(mktemp -d /tmp/test_geometry_simdisk.XXXXXX)
loop=
cleanup() {
	[ -n "$loop" ] && "$SD" detach "$loop" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT

"$DG" model "$PRESET" --json "$T/truth.json" >/dev/null || { echo "FAIL model"; exit 1; }
loop=$("$SD" attach "$PRESET" 2>"$T/attach.err") || { echo "FAIL attach: $(cat "$T/attach.err")"; exit 1; }
for attempt in 1 2 3; do
	"$DG" geometry "$loop" --places 6 --time-budget 150s --json "$T/g.json" >/dev/null \
		2>"$T/err"
	if out=$(python3 - "$T/g.json" "$T/truth.json" <<'PYEOF'
import json, sys
g = json.load(open(sys.argv[1]))["geometry"]
zones = json.load(open(sys.argv[2]))["zones"]
ok = [p for p in g["places"] if p["ok"]]
assert ok, "no place measured: %s" % [p.get("note") for p in g["places"]]
for p in ok:
    z = [t for t in zones if t["start_bytes"] <= p["offset_bytes"] < t["end_bytes"]][0]
    assert p["sectors_per_track"] == [z["sectors_per_track"]] * 4, (p, z)
assert g["heads"] == 4, g.get("heads")
assert g["layout"] == "cylinder", g.get("layout")
print("%d of %d places measured, every size right; heads %d, layout %s" %
      (len(ok), len(g["places"]), g["heads"], g["layout"]))
PYEOF
	); then
		echo "ok   $out"
		exit 0
	fi
	echo "attempt $attempt: $out"
done
echo "FAIL geometry on $loop"
exit 1
