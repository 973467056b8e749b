#!/bin/bash
# SPDX-License-Identifier: MIT
# diskgeo sweep at the command line: the human tables, sweep.csv (header = the JSON keys, one
# row per cell, empty fields for cells not measured), profile --sweep (section and
# --csv-dir/sweep.csv), a default sweep within its 60 s budget and thinned explicitly, and an
# interrupted sweep (exit 4, run.complete false, the cells left marked "interrupted").
# Usage: test_sweep_cli.sh DISKGEO
set -u
DG=${1:?usage: test_sweep_cli.sh DISKGEO}
T=$(mktemp -d /tmp/test_sweep_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

# default sweep: tables, CSV, budget
"$DG" sweep sim:wd-red-4tb --csv "$T/s.csv" --json "$T/s.json" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] && pass "default sweep exits 0" || fail "default sweep exit $rc"
for t in "sequential reads, outer (MB/s)" "sequential reads, inner (MB/s)" \
	"random reads, full (IOPS" "random reads, first10 (IOPS" "sector format (reads): logical 512, physical 4096 reported"; do
	grep -qF "$t" "$T/out" && pass "table: $t" || fail "no '$t' in the summary"
done
head -1 "$T/s.csv" | grep -qx 'kind,op,where,block_bytes,qd,measured,mb_per_s,iops,latency_ms_mean,latency_ms_p50,latency_ms_p99,ncq_gain' &&
	pass "sweep.csv header" || fail "sweep.csv header: $(head -1 "$T/s.csv")"
python3 - "$T/s.json" "$T/s.csv" <<'PYEOF' && pass "default: <= 60 s, thinned in the JSON, CSV rows match" || fail "default sweep figures"
import csv, json, sys
d = json.load(open(sys.argv[1]))
s = d["sweep"]
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(s["cells"]) == s["cells_total"] == 156, (len(rows), s["cells_total"])
assert s["device_time_s"] <= 60, s["device_time_s"]
assert s["thinned"] and 0 < s["cells_measured"] < 156
skipped = [c for c in s["cells"] if not c["measured"]]
assert all(c["skipped"] and "mb_per_s" not in c for c in skipped)
assert all(r["mb_per_s"] == "" for r in rows if r["measured"] == "false")
assert "sweep-thinned" in d["warning_codes"]
g = [x for x in s["ncq_gain"] if x["qd"] == 1]
assert g and all(abs(x["gain"] - 1) < 1e-9 for x in g)
print("  %d of 156 cells in %.1f s" % (s["cells_measured"], s["device_time_s"]))
PYEOF

# profile --sweep
"$DG" profile sim:hgst-7k1000 --no-bandwidth --no-seek --sweep --sweep-budget 10s \
	--sweep-qd 1,4 --sweep-rand-blocks 4k --sweep-seq-blocks 1M --json "$T/p.json" \
	--csv-dir "$T/csv" >/dev/null 2>&1
rc=$?
[ "$rc" = 0 ] && pass "profile --sweep exits 0" || fail "profile --sweep exit $rc"
python3 - "$T/p.json" <<'PYEOF' && pass "profile: sweep section with the grid asked for" || fail "profile sweep section"
import json, sys
d = json.load(open(sys.argv[1]))
cells = d["sweep"]["cells"]
assert {c["qd"] for c in cells} == {1, 4}
assert {c["block_bytes"] for c in cells if c["kind"] == "rand"} == {4096}
assert {c["block_bytes"] for c in cells if c["kind"] == "seq"} == {1 << 20}
assert d["run"]["parameters"]["sweep"]["sweep_qds"] == [1, 4]
PYEOF
[ "$(wc -l <"$T/csv/sweep.csv")" = 9 ] && pass "profile --csv-dir: sweep.csv with 8 cells" ||
	fail "profile sweep.csv: $(wc -l <"$T/csv/sweep.csv" 2>&1)"

# interrupted
head -c $((512 << 20)) /dev/zero >"$T/disk.img"
"$DG" sweep "$T/disk.img" --rand-blocks 4k --seq-blocks 64k --ios 10000000 --time-budget 1h \
	--json "$T/i.json" >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 4 ] && pass "interrupted: exit 4" || fail "interrupted: exit $rc"
python3 - "$T/i.json" <<'PYEOF' && pass "interrupted: partial profile, cells marked" || fail "interrupted profile"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["run"]["complete"] is False
assert any(c.get("skipped") == "interrupted" for c in d["sweep"]["cells"])
PYEOF
echo "test_sweep_cli: $fails failures"
[ "$fails" -eq 0 ]
