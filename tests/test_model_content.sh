#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `diskgeo model` states the truth of a drive spec; this test recomputes that truth by hand from
# the preset's own numbers (presets/hgst-7k1000.json and docs/drive-spec.md's formulas), not from
# the model code, and compares: capacity, cylinders, the revolution T, every zone's sustained
# rate (tracks x T plus the default skews ceil(tau/T*S)+1, rounded up to whole 4096-byte physical
# sectors, of its head switches and cylinder steps), outer/inner rates, the recording zones, and
# the Ruemmler & Wilkes seek curve fitted to the friendly figures (its boundary found by
# bisection so that the mean over random distinct cylinder pairs is average_ms), track to track,
# the cylinder average and the full stroke (LBA 0 to the last LBA), in the JSON and in the text.
#
#   test_model_content.sh DISKGEO SOURCE_DIR
set -u
DISKGEO=${1:?usage: test_model_content.sh DISKGEO SOURCE_DIR}
SRC=${2:?usage: test_model_content.sh DISKGEO SOURCE_DIR}
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

if ! "$DISKGEO" model hgst-7k1000 --json "$T/m.json" >"$T/m.txt" 2>"$T/m.err"; then
	echo "FAIL: diskgeo model hgst-7k1000 --json: $(cat "$T/m.err")"
	exit 1
fi
python3 - "$SRC/presets/hgst-7k1000.json" "$T/m.json" "$T/m.txt" <<'PY'
import json, math, sys

spec = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
text = open(sys.argv[3]).read()
fails = []

def near(what, got, want, rel=2e-6, ab=1e-4):
    if not abs(got - want) <= max(ab, rel * abs(want)):
        fails.append("%s: %r, by hand %r" % (what, got, want))

# ---- geometry and capacity ----
L, P, H = spec["logical_sector_bytes"], spec["physical_sector_bytes"], spec["heads"]
T = 60e3 / spec["rpm"]                                   # ms per revolution
zones = spec["zones"]
N = sum(z["cylinders"] for z in zones)
near("capacity_bytes", d["capacity_bytes"], spec["capacity_sectors"] * L, ab=0)
near("cylinders", d["cylinders"], N, ab=0)
near("period_ms", d["period_ms"], T, ab=1e-9)
if "capacity: %d bytes (1.00 TB, 931.5 GiB)" % (spec["capacity_sectors"] * L) not in text:
    fails.append("the text's capacity line")

# ---- zone rates: the sequential walk of each zone (cylinder layout, default skews) ----
def skew(tau_ms, S):                                     # ceil(tau/T*S)+1, whole physical sectors
    k = math.ceil(tau_ms / T * S) + 1
    per = P // L
    return -(-k // per) * per

t2t, avg, full = (spec["seek"][k] for k in ("track_to_track_ms", "average_ms", "full_stroke_ms"))
hs = spec["head_switch_ms"]
rates = []
for i, z in enumerate(zones):
    S, C = z["sectors_per_track"], z["cylinders"]
    sectors_time = C * H * S + C * (H - 1) * skew(hs, S) + (C - 1) * skew(t2t, S)
    rate = C * H * S * L / (sectors_time * T / S) / 1e3      # bytes per ms / 1e3 = MB/s
    rates.append(rate)
    near("zone %d mb_per_s" % (i + 1), d["zones"][i]["mb_per_s"], rate, rel=1e-6, ab=1e-4)
    near("zone %d sectors_per_track" % (i + 1), d["zones"][i]["sectors_per_track"], S, ab=0)
near("outer_mb_per_s", d["outer_mb_per_s"], rates[0], ab=1e-4)
near("inner_mb_per_s", d["inner_mb_per_s"], rates[-1], ab=1e-4)
near("recording zones", len(d["recording_zones"]), len(zones), ab=0)  # every rate differs
if "outer %.3f MB/s, inner %.3f MB/s" % (rates[0], rates[-1]) not in text:
    fails.append("the text's outer/inner line")

# ---- the seek curve from the friendly figures (drive-spec.md, "Friendly seek figures") ----
def curve(B):
    g = lambda x: math.sqrt(x) - 1 if x < B else math.sqrt(B) / 2 + x / (2 * math.sqrt(B)) - 1
    b = (full - t2t) / g(N - 1)
    a = t2t - b
    e = b / (2 * math.sqrt(B))
    c = a + b * math.sqrt(B) / 2
    return a, b, c, e

# sums over d = 1..N-1 of (N-d) * {1, sqrt d, d}, split at B by prefix sums
w0, w1, w2 = [0.0], [0.0], [0.0]
for x in range(1, N):
    w0.append(w0[-1] + (N - x))
    w1.append(w1[-1] + (N - x) * math.sqrt(x))
    w2.append(w2[-1] + (N - x) * x)

def mean_over_cylinder_pairs(B):
    a, b, c, e = curve(B)
    k = min(N - 1, math.ceil(B) - 1)                     # d <= k uses a + b sqrt d
    s = a * w0[k] + b * w1[k] + c * (w0[-1] - w0[k]) + e * (w2[-1] - w2[k])
    return s * 2 / (N * (N - 1))

lo, hi = 1.0, float(N - 1)
for _ in range(200):
    mid = (lo + hi) / 2
    if mean_over_cylinder_pairs(mid) < avg:
        lo = mid
    else:
        hi = mid
B = (lo + hi) / 2
a, b, c, e = curve(B)
seek = lambda x: 0.0 if x == 0 else (a + b * math.sqrt(x) if x < B else c + e * x)
sk = d["seek"]
near("seek boundary_cylinders", sk["boundary_cylinders"], B, rel=1e-6)
for name, want in (("a_ms", a), ("b_ms", b), ("c_ms", c), ("e_ms", e)):
    near("seek " + name, sk[name], want, rel=1e-6, ab=1e-12)
near("track_to_track_ms", sk["track_to_track_ms"], seek(1))
near("track_to_track_ms is the spec's", sk["track_to_track_ms"], t2t)
near("average_cylinder_ms", sk["average_cylinder_ms"], mean_over_cylinder_pairs(B), ab=1e-4)
near("head_switch_ms", sk["head_switch_ms"], hs, ab=0)

# full stroke: LBA 0 (cylinder 0) to the last LBA's cylinder
last, lba0, cyl0 = spec["capacity_sectors"] - 1, 0, 0
for z in zones:
    n = z["cylinders"] * H * z["sectors_per_track"]
    if last < lba0 + n:
        last_cyl = cyl0 + (last - lba0) // z["sectors_per_track"] // H
        break
    lba0, cyl0 = lba0 + n, cyl0 + z["cylinders"]
near("full_stroke_ms", sk["full_stroke_ms"], seek(last_cyl), ab=1e-5)
if "full stroke           %.3f ms" % seek(last_cyl) not in text:
    fails.append("the text's full stroke line")

for f in fails:
    print("FAIL:", f)
print("test_model_content: %d figures off" % len(fails))
sys.exit(1 if fails else 0)
PY
