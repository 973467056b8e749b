#!/bin/bash
# SPDX-License-Identifier: MIT
# Timing decides, end to end (issue 13): the two modern presets (exos-x16-16tb: per-surface
# formats, serpentine bands, 512e, NCQ 32, look-behind; ironwolf-8tb-weak-head: serpentine, a
# weak head, background media scans) served by diskgeo-simdisk as loop devices that say they
# are NOT rotational (--rotational 0, as loop, dm, md and USB layers often do), profiled in real
# time with `diskgeo profile` (a 30 s curve, a 20 s seek curve, no spans):
#   - device.rotational false (the flag) and device.rotational_timed true (the timing);
#   - rpm within 0.1% (the rotation method takes the host's latency as jitter);
#   - track-to-track within 0.6 ms, average and full stroke within 5% (the issue's 0.3 ms and
#     3% are for virtual time: here a FUSE round trip and a shared machine's scheduling add
#     up to a few tenths of a millisecond to single reads, and a 20 s budget measures fewer
#     samples than the default's 60 s);
#   - the bandwidth curve: more than one zone, or one whose reason says the curve falls by 10%
#     or more (steps no boundary could be placed at; exos's surfaces hide its 2-3.5% steps and
#     bandwidth_ramp.c merges the cuts made where no step is): never a flat verdict, which would
#     throw the curve away; the zone boundaries and the median sample error are printed against the truth, not asserted
#     (the bandwidth side of issue 13 is being fixed separately).
# Real-time figures on a shared machine: each preset is retried once.
# Needs root, /dev/fuse and loop devices (exit 77 without).
# Usage: test_seek_simdisk.sh DISKGEO SIMDISK SOURCE_DIR
set -u

DG=${1:?usage: test_seek_simdisk.sh DISKGEO SIMDISK SOURCE_DIR}
SD=${2:?}
SRC=${3:?}
if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ] || [ ! -e /dev/loop-control ]; then
	echo "test_seek_simdisk: needs root, /dev/fuse and loop devices; skipped"
	exit 77
fi
T=$(mktemp -d /tmp/test_seek_simdisk.XXXXXX)
loops=()
cleanup() {
	for l in "${loops[@]}"; do "$SD" detach "$l" >/dev/null 2>&1; done
	rm -rf "$T"
}
trap cleanup EXIT
fails=0

judge() {
	python3 - "$1" "$2" "$SRC/bench/zoo" <<'PYEOF'
import importlib.machinery, importlib.util, json, statistics, sys
loader = importlib.machinery.SourceFileLoader("zoo", sys.argv[3])
zoo = importlib.util.module_from_spec(importlib.util.spec_from_loader("zoo", loader))
loader.exec_module(zoo)
p, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
dev, rot, s, ts = p["device"], p.get("rotation", {}), p.get("seek", {}), t["seek"]
bad = []
def check(ok, what):
    print(("ok   " if ok else "off  ") + what)
    if not ok:
        bad.append(what)
check(dev.get("rotational") is False and dev.get("rotational_timed") is True,
      "rotational flag %s, timed %s" % (dev.get("rotational"), dev.get("rotational_timed")))
rpm = rot.get("rpm")
check(rpm is not None and abs(rpm / t["rpm"] - 1) <= 0.001, "rpm %s (truth %g)" % (rpm, t["rpm"]))
for key, rel, absl in (("track_to_track_ms", None, 0.6), ("average_ms", 0.05, None),
                       ("full_stroke_ms", 0.05, None)):
    v = s.get(key)
    err = None if v is None else (abs(v - ts[key]) if absl else abs(v / ts[key] - 1))
    check(err is not None and err <= (absl or rel), "%s %s (truth %g)" % (key, v, ts[key]))
bw = p.get("bandwidth", {})
falls = "falls by" in bw.get("flat_reason", "") and \
    bw["inner_mb_per_s"] < 0.9 * bw["outer_mb_per_s"]
check(len(bw.get("zones", [])) > 1 or falls, "%d zones found%s" % (len(bw.get("zones", [])),
      " (the curve falls from %.1f to %.1f MB/s)" % (bw["outer_mb_per_s"], bw["inner_mb_per_s"])
      if falls else ""))
def zone_rate(zones, off, length):
    """The rate of [off, off + length) walked at the zone rates (per-surface pricing is bench/zoo's)."""
    t = sum((min(off + length, z["end_bytes"]) - max(off, z["start_bytes"])) / (z["mb_per_s"] * 1e6)
            for z in zones if min(off + length, z["end_bytes"]) > max(off, z["start_bytes"]))
    return length / t / 1e6
if bw.get("samples"):
    med = 100 * statistics.median(abs(x["mb_per_s"] / zone_rate(
        t["zones"], x["offset_bytes"], x["length_bytes"]) - 1) for x in bw["samples"])
    print("info zone boundaries missed or made up: %d; median sample error %.2f%% (not asserted)"
          % (zoo.zone_misses(t["zones"], bw["zones"]), med))
print("BAD" if bad else "GOOD")
PYEOF
}

for preset in exos-x16-16tb ironwolf-8tb-weak-head; do
	"$DG" model "$preset" --json "$T/$preset.truth.json" >/dev/null || {
		echo "FAIL model $preset"
		fails=$((fails + 1))
		continue
	}
	out=BAD
	for attempt in 1 2; do
		loop=$("$SD" attach "$preset" --rotational 0 2>"$T/attach.err") || {
			echo "FAIL attach $preset: $(cat "$T/attach.err")"
			break
		}
		loops+=("$loop")
		"$DG" profile "$loop" --bandwidth-budget 30s --seek-budget 20s --no-spans \
			--json "$T/$preset.json" -q 2>"$T/err"
		"$SD" detach "$loop" >/dev/null 2>&1
		out=$(judge "$T/$preset.json" "$T/$preset.truth.json" 2>&1)
		echo "$out" | sed "s/^/    $preset (try $attempt): /"
		case "$out" in *GOOD) break ;; esac
	done
	case "$out" in
	*GOOD) echo "ok   $preset: rotation and seek from timing on a non-rotational loop device" ;;
	*)
		echo "FAIL $preset: figures off the truth"
		fails=$((fails + 1))
		;;
	esac
done
[ "$fails" = 0 ]
