#!/bin/sh
# SPDX-License-Identifier: MIT
# diskgeo-plot's geometry figures end to end: `diskgeo geometry` of a zoo drive with 13
# surfaces of different sizes (zoo:12, cylinder layout) plotted into geometry-tracks (one
# colour per surface: a legend entry for each of the 13) and geometry-skew (both skews); a
# profile without a geometry section gets no geometry figure; a geometry section that is not
# diskgeo's is refused with one line and exit 1.
# Usage: test_plot_geometry.sh PYTHON TOOL DISKGEO. Exit 77 when PYTHON cannot import matplotlib.
set -u

PY=${1:?usage: test_plot_geometry.sh PYTHON TOOL DISKGEO}
TOOL=${2:?}
DISKGEO=${3:?}

if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
	echo "test_plot_geometry: $PY cannot import matplotlib; skipped"
	exit 77
fi
T=$(mktemp -d /tmp/test_plot_geometry.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
check() {
	d=$1
	shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}
svg_has() { tr '\n' ' ' <"$1" | grep -qF -- "$2"; }

"$DISKGEO" model --random 12 >"$T/zoo12.json"
"$DISKGEO" geometry "sim:$T/zoo12.json" --places 8 --json "$T/g.json" -q 2>"$T/gen.err"
check "geometry exits 0" [ $? -eq 0 ]
"$PY" "$TOOL" "$T/g.json" -o "$T/out" >"$T/out.txt" 2>"$T/err.txt"
check "diskgeo-plot exits 0" [ $? -eq 0 ]
for k in geometry-tracks geometry-skew; do
	check "$k.svg written and listed" grep -qx "$T/out/$k.svg" "$T/out.txt"
	check "$k.png written" [ -s "$T/out/$k.png" ]
done
check "only the two geometry figures" [ "$(wc -l <"$T/out.txt")" -eq 4 ]
heads=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["geometry"]["heads"])' "$T/g.json")
check "13 surfaces measured ($heads)" [ "$heads" = 13 ]
check "tracks: a colour for the last surface" svg_has "$T/out/geometry-tracks.svg" "surface 12"
check "skew: the head switch skew" svg_has "$T/out/geometry-skew.svg" "track skew (head switch)"
check "skew: the cylinder skew" svg_has "$T/out/geometry-skew.svg" "cylinder skew"

# a profile without geometry: no geometry figure
"$DISKGEO" seek sim:cheetah-15k --distances 4 --samples 2 --no-spans --json "$T/s.json" -q
"$PY" "$TOOL" "$T/s.json" -o "$T/seek" >"$T/seek.txt" 2>/dev/null
check "no geometry figure without a geometry section" sh -c "! grep -q '/geometry-' '$T/seek.txt'"

# a geometry section diskgeo did not write
"$PY" - "$T/g.json" "$T/bad.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["geometry"]["places"][0]["ok"] = True
d["geometry"]["places"][0]["sectors_per_track"] = "many"
json.dump(d, open(sys.argv[2], "w"))
PYEOF
"$PY" "$TOOL" "$T/bad.json" -o "$T/bad" >/dev/null 2>"$T/bad.err"
rc=$?
check "a foreign geometry section: exit 1 (rc=$rc)" [ "$rc" -eq 1 ]
check "... one line naming the place" grep -q "bad.json: geometry.places\[0\]: sectors_per_track is not a list of integers" "$T/bad.err"

echo "test_plot_geometry: $fails failures"
[ "$fails" -eq 0 ]
