#!/bin/sh
# SPDX-License-Identifier: MIT
# diskgeo-plot's sweep figures end to end: a write sweep of sim:wd-red-4tb (512e; writes on sim:
# destroy nothing) plotted into sweep-seq, sweep-iops and sweep-rmw; the RMW bars show the
# penalty of one revolution (11.1 ms at 5400 rpm) at 4 KiB and the 4 KiB physical sector as
# timed; a sweep section that is not diskgeo's is refused with one line and exit 1.
# Usage: test_plot_sweep.sh PYTHON TOOL DISKGEO. Exit 77 when PYTHON cannot import matplotlib.
set -u

PY=${1:?usage: test_plot_sweep.sh PYTHON TOOL DISKGEO}
TOOL=${2:?}
DISKGEO=${3:?}

if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
	echo "test_plot_sweep: $PY cannot import matplotlib; skipped"
	exit 77
fi
T=$(mktemp -d /tmp/test_plot_sweep.XXXXXX)
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

"$DISKGEO" sweep sim:wd-red-4tb --write --confirm-destroy=wd-red-4tb --range 100G:200G \
	--seq-blocks 64k,1M --rand-blocks 4k,64k --qd 1,4,32 --rmw-ios 64 --time-budget 5m \
	--json "$T/s.json" >/dev/null 2>"$T/gen.err"
check "the sweep exits 0" [ $? -eq 0 ]
"$PY" "$TOOL" "$T/s.json" -o "$T/out" >"$T/out.txt" 2>"$T/err.txt"
check "diskgeo-plot exits 0" [ $? -eq 0 ]
for k in sweep-seq sweep-iops sweep-rmw; do
	check "$k.svg written and listed" grep -qx "$T/out/$k.svg" "$T/out.txt"
	check "$k.png written" [ -s "$T/out/$k.png" ]
done
check "only the three sweep figures" [ "$(wc -l <"$T/out.txt")" -eq 6 ]
check "seq: one line per QD and edge" svg_has "$T/out/sweep-seq.svg" "QD 32 inner"
check "seq: write sweep titled so" svg_has "$T/out/sweep-seq.svg" "Sequential write MB/s vs block size"
check "iops: a line per block and span" svg_has "$T/out/sweep-iops.svg" "64 KiB first 10%"
check "rmw: 4 KiB physical as timed" svg_has "$T/out/sweep-rmw.svg" "physical 4 KiB as timed, 4 KiB reported"
pen=$("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]))["sweep"]["rmw"]; print("%+.1f ms" % m["penalty_ms"])' "$T/s.json")
check "rmw: the 4 KiB penalty bar is labelled ($pen, one revolution is 11.1 ms)" svg_has "$T/out/sweep-rmw.svg" "$pen"
case "$pen" in +10.* | +11.* | +12.*) pass "penalty within 10% of T" ;; *) fail "penalty $pen not within 10% of 11.1 ms" ;; esac

# a sweep section diskgeo did not write
"$PY" - "$T/s.json" "$T/bad.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["sweep"]["cells"][0]["measured"] = True
d["sweep"]["cells"][0]["where"] = "middle"
json.dump(d, open(sys.argv[2], "w"))
PYEOF
"$PY" "$TOOL" "$T/bad.json" -o "$T/bad" >/dev/null 2>"$T/bad.err"
rc=$?
check "a foreign sweep section: exit 1 (rc=$rc)" [ "$rc" -eq 1 ]
check "... one line naming the cell" grep -q "bad.json: sweep.cells\[0\]: kind or where is not one diskgeo writes" "$T/bad.err"
check "... and nothing written" [ ! -e "$T/bad/sweep-seq.png" ]

echo "test_plot_sweep: $fails failures"
[ "$fails" -eq 0 ]
