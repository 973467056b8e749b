#!/bin/bash
# SPDX-License-Identifier: MIT
# diskgeo sweep end to end on diskgeo-simdisk (root, /dev/fuse, loop devices; exit 77 without):
#  - hgst-7k1000 with NCQ 32 (a copy of the preset with ncq_depth 32), served as a loop device
#    in real time: the random 4 KiB cells over the whole device at QD 1, 8 and 32 within 7% of
#    the truth's reference simulation (`diskgeo model --json`: random_4k_qd); the host's
#    latency (a FUSE round trip, ~0.1 ms against 6-15 ms per read) is inside that margin;
#  - the 512e inference in write mode: hgst-7k1000 is 512e, the loop device says 512/512, and
#    `sweep --write` on a scratch range must time it as 4096-byte physical, with a penalty of one
#    revolution (8.33 ms at 7200 rpm) within 10%.
# Usage: test_sweep_simdisk.sh DISKGEO SIMDISK SOURCE_DIR/presets/hgst-7k1000.json. Real-time figures on a shared machine: each timed
# check is retried once.
set -u

DG=${1:?usage: test_sweep_simdisk.sh DISKGEO SIMDISK PRESET_JSON}
SD=${2:?}
PRESET=${3:?}
if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ] || [ ! -e /dev/loop-control ]; then
	echo "test_sweep_simdisk: needs root, /dev/fuse and loop devices; skipped"
	exit 77
fi
T=$(mktemp -d /tmp/test_sweep_simdisk.XXXXXX)
loops=()
cleanup() {
	for l in "${loops[@]}"; do "$SD" detach "$l" >/dev/null 2>&1; done
	"$SD" list 2>/dev/null | grep -qF "$T/" && echo "test_sweep_simdisk: a loop device of $T is left" >&2
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); d["ncq_depth"] = 32; d["name"] = "hgst-ncq32"
json.dump(d, open(sys.argv[2], "w"), indent=1)' "$PRESET" "$T/ncq.json" 2>/dev/null ||
	fail "no spec copy"
"$DG" model "$T/ncq.json" --json "$T/truth.json" >/dev/null || fail "model"

# attach SPEC: sets $loop and remembers it for the cleanup (in this shell, not a subshell)
attach() {
	loop=$("$SD" attach "$1" 2>"$T/attach.err") || {
		fail "attach $1: $(cat "$T/attach.err")"
		return 1
	}
	loops+=("$loop")
}

# ---- NCQ 32: random 4 KiB IOPS at QD 1, 8, 32 ----
if attach "$T/ncq.json"; then
	for attempt in 1 2; do
		"$DG" sweep "$loop" --seq-blocks 1M --rand-blocks 4k --qd 1,8,32 --ios 600 \
			--rmw-ios 0 --time-budget 10m --json "$T/ncq-sweep.json" >/dev/null 2>"$T/err"
		out=$(python3 - "$T/ncq-sweep.json" "$T/truth.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))["sweep"]
t = {x["qd"]: x["iops"] for x in json.load(open(sys.argv[2]))["random_4k_qd"]}
bad = 0
for c in s["cells"]:
    if c["kind"] == "rand" and c["where"] == "full" and c["block_bytes"] == 4096:
        rel = c["iops"] / t[c["qd"]] - 1
        ok = abs(rel) <= 0.07
        bad += not ok
        print("%s QD %d: %.1f IOPS, truth %.1f (%+.1f%%)" % ("ok  " if ok else "off ", c["qd"], c["iops"], t[c["qd"]], 100 * rel))
print("BAD" if bad else "GOOD")
PYEOF
)
		echo "$out" | sed 's/^/    /'
		case "$out" in *GOOD) break ;; esac
	done
	case "$out" in *GOOD) pass "NCQ 32: random 4 KiB at QD 1, 8, 32 within 7% of the truth" ;;
	*) fail "NCQ 32: random 4 KiB IOPS off the truth" ;; esac
fi

# ---- 512e served as 512/512: the physical sector from timing, in write mode ----
if attach hgst-7k1000; then
	name=${loop#/dev/}
	lp=$(cat "/sys/block/$name/queue/physical_block_size")
	[ "$lp" = 512 ] && pass "the loop device reports 512-byte physical sectors" ||
		fail "the loop device reports $lp"
	for attempt in 1 2; do
		"$DG" sweep "$loop" --write --confirm-destroy="$name" --range 10G:11G \
			--seq-blocks 1M --rand-blocks 4k --qd 1 --ios 16 --rmw-ios 48 \
			--json "$T/rmw.json" >"$T/rmw.out" 2>"$T/rmw.err"
		rc=$?
		res=$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["sweep"]["rmw"]
ok = m["physical_sector_bytes_timed"] == 4096 and m["physical_sector_bytes_reported"] == 512 and abs(m["penalty_ms"] - 60000 / 7200) <= 0.1 * 60000 / 7200
print("timed %d reported %d penalty %.2f ms %s" % (m["physical_sector_bytes_timed"], m["physical_sector_bytes_reported"], m["penalty_ms"], "GOOD" if ok else "BAD"))' "$T/rmw.json" 2>&1)
		echo "    exit $rc: $res"
		case "$res" in *GOOD) break ;; esac
	done
	case "$res" in *GOOD) pass "512e served as 512/512: timed as 4096-byte physical, penalty one revolution" ;;
	*) fail "512e inference on simdisk: $res" ;; esac
	grep -q "behaves as 4096-byte physical although it reports 512" "$T/rmw.out" &&
		pass "the summary says the device behaves as 4096-byte physical" ||
		fail "the summary does not say so: $(head -3 "$T/rmw.out")"
	grep -q "sweep --write will overwrite blocks anywhere in \[10737418240, 11811160064)" "$T/rmw.err" &&
		pass "the write was announced with its range" || fail "no announcement: $(head -2 "$T/rmw.err")"
fi

for l in "${loops[@]}"; do "$SD" detach "$l" >/dev/null 2>&1 || fail "detach $l"; done
loops=()
"$SD" list 2>/dev/null | grep -qF "$T/" && fail "a loop device serving $T is left" || pass "every loop device attached here is detached"
echo "test_sweep_simdisk: $fails failures"
[ "$fails" -eq 0 ]
