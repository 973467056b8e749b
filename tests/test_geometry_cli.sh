#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# diskgeo geometry's command line: bad input (a range too small for one track, a budget below
# one zone's, a bad option value) gets one line on stderr and exit 1; a run on a sim: drive
# writes the "geometry" section (heads, layout, zones) and geometry.csv with --csv-dir, and
# profile --geometry adds the same section.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_usage() { # ARGS... : exit 1 and exactly one line on stderr
	local rc=0
	"$bin" geometry "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = 1 ] || fail "geometry $*: exit $rc, expected 1"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "geometry $*: stderr is not one line: $(cat "$tmp/err")"
}
expect_usage sim:cheetah-15k --range 0:1M
grep -q "too small for one track" "$tmp/err" || fail "range message: $(cat "$tmp/err")"
expect_usage sim:cheetah-15k --time-budget 2s
grep -q "below the minimum for one zone" "$tmp/err" || fail "budget message: $(cat "$tmp/err")"
expect_usage sim:cheetah-15k --places 0
expect_usage sim:cheetah-15k --range nonsense

"$bin" geometry sim:cheetah-15k --places 6 --json "$tmp/g.json" --csv-dir "$tmp/csv" -q
"$bin" model cheetah-15k --json "$tmp/m.json" >/dev/null
python3 - "$tmp/g.json" "$tmp/m.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["geometry"]
truth = json.load(open(sys.argv[2]))["zones"]
assert g["heads"] == 4, g["heads"]
assert g["layout"] == "cylinder", g["layout"]
assert abs(g["head_switch_ms"] - 0.3) <= 0.1, g["head_switch_ms"]
for k in ("start_bytes", "end_bytes", "sectors_per_track", "track_skew_sectors",
          "cylinder_skew_sectors"):
    assert k in g["zones"][0], k
ok = [p for p in g["places"] if p["ok"]]
assert len(ok) >= 5, g["places"]
skews = 0
for p in ok:  # each place's track size is its spec zone's, its skews the model's (one sector)
    z = [t for t in truth if t["start_bytes"] <= p["offset_bytes"] < t["end_bytes"]][0]
    assert p["sectors_per_track"] == [z["sectors_per_track"]] * 4, (p, z)
    for k in ("track_skew_sectors", "cylinder_skew_sectors"):
        if k in p:
            skews += 1
            assert min(z[k]) - 1 <= p[k] <= max(z[k]) + 1, (k, p, z[k])
assert skews >= 2 * len(ok) - 2, "skews measured at %d of %d places" % (skews, len(ok))
PY
# geometry.csv says what the JSON says, one row per zone and surface; a value the JSON leaves out
# (not measured) is an empty field, never "nan"
python3 - "$tmp/g.json" "$tmp/csv/geometry.csv" <<'PY' || fail "geometry.csv against the JSON"
import csv, json, sys
zones = json.load(open(sys.argv[1]))["geometry"]["zones"]
rows = list(csv.DictReader(open(sys.argv[2])))
assert list(rows[0]) == ["start_bytes", "end_bytes", "surface", "sectors_per_track",
                         "track_skew_sectors", "cylinder_skew_sectors",
                         "zone_change_skew_sectors", "model_mb_per_s", "places"], list(rows[0])
assert len(rows) == sum(len(z["sectors_per_track"]) for z in zones), len(rows)
rows = iter(rows)
for z in zones:
    for h, spt in enumerate(z["sectors_per_track"]):
        r = next(rows)
        assert (int(r["start_bytes"]), int(r["surface"]), int(r["sectors_per_track"])) == \
            (z["start_bytes"], h, spt), (r, z)
        for k in ("track_skew_sectors", "cylinder_skew_sectors", "zone_change_skew_sectors",
                  "model_mb_per_s"):
            if k in z:
                assert abs(float(r[k]) - z[k]) <= 1e-3 * max(1, abs(z[k])), (k, r, z)
            else:
                assert r[k] == "", (k, r)
PY
"$bin" profile sim:cheetah-15k --no-bandwidth --no-seek --geometry --geometry-budget 30s \
	--json "$tmp/p.json" -q
python3 -c "import json,sys; g=json.load(open(sys.argv[1]))['geometry']; assert g['heads']==4" \
	"$tmp/p.json" || fail "profile --geometry"
echo "test_geometry_cli: ok"
