#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hostile drive specs (issue 15, item 11): every spec either loads and `model` answers fast, or is
# refused before the expensive work with one line naming the key and the limit (exit 1).
# The specs are generated here at run time (python3). Each case asserts the exit code, that
# stderr is exactly one line matching the case's pattern, and the child's CPU time (user + system,
# from getrusage, so a loaded machine does not fail it) and peak memory under generous bounds:
# 5 s and 400 MB. Before the limits, these specs took 38 s to 100+ s or 4.6 GB (issue 15).
# At the limits of drive model v2 (2^24 tracks), the costliest accepted shapes measured: cylinder
# layout 0.4 s, serpentine up to 2.8 s (the truth walks tracks where x and x+D of a seek at a
# distance lie on different heads' passes or in different zones within the seek curve's square
# root part).
#
# Usage: tests/test_spec_limits.sh DISKGEO_BINARY
set -u
dg=$(readlink -f "${1:?usage: test_spec_limits.sh DISKGEO_BINARY}")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d /tmp/diskgeo-limits.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Two steps: one process writes the specs (some are 60 MB strings), a small one runs the cases, so
# that the peak memory of a child (ru_maxrss, which counts what a child inherits before exec) is
# diskgeo's own.
"$py" - "$tmp" <<'PY' || { echo "test_spec_limits: cannot generate the specs"; exit 1; }
import json, os, sys

tmp = sys.argv[1]
SEEK = {"track_to_track_ms": 1.0, "average_ms": 8.0, "full_stroke_ms": 16.0}


def spec(**kw):
    d = {"name": "hostile", "heads": 1, "rpm": 7200, "head_switch_ms": 0.5, "seek": SEEK}
    d.update(kw)
    return d


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def js(d):
    return json.dumps(d, separators=(",", ":"))


def defects(n, start=10):
    # descending LBAs: the order that made the old insertion sort quadratic
    return [{"lba": (n - i) * start, "count": 1, "kind": "slow", "extra_ms": 1} for i in range(n)]


def zones(n, cyl, spt0=100000):
    return [{"cylinders": cyl, "sectors_per_track": spt0 - 7 * (i % 1000)} for i in range(n)]


cases = [
    # (name, file text, expected exit, stderr pattern (all words must appear) or None)
    ("1,000,000 defects, descending (60 MB)",
     js(spec(zones=[{"cylinders": 100000, "sectors_per_track": 1000}], defects=defects(1000000))),
     1, ["more than the limit of 1048576"]),
    ("16384 defects, descending (the limit)",
     js(spec(zones=[{"cylinders": 100000, "sectors_per_track": 1000}], defects=defects(16384))),
     0, None),
    ("16385 defects",
     js(spec(zones=[{"cylinders": 100000, "sectors_per_track": 1000}], defects=defects(16385))),
     1, ["defects", "16385 defects, more than the limit of 16384"]),
    ("60 MB of nested empty objects", '{"a":' * 10000000 + "{}" + "}" * 10000000,
     1, ["60000002 bytes, more than the limit of 1048576"]),
    ("1 MiB of empty objects in an array", "[" + ",".join(["{}"] * 349000) + "]",
     1, ["must be a JSON object"]),
    ("nesting deeper than the parser's bound", '{"a":' * 100000 + "{}" + "}" * 100000,
     1, ["maximum parsing depth"]),
    ("473-byte spec: 4194304 cylinders x 2097152 sectors per track, 32 heads",
     js(spec(heads=32, zones=[{"cylinders": 4194304, "sectors_per_track": 2097152}])),
     1, ["zones[0].sectors_per_track", "at most 1048576"]),
    ("the same, serpentine with band_cylinders 1",
     js(spec(heads=32, layout="serpentine", band_cylinders=1,
             zones=[{"cylinders": 4194304, "sectors_per_track": 2097152}])),
     1, ["zones[0].sectors_per_track", "at most 1048576"]),
    ("4194304 cylinders x 1048576 sectors per track",
     js(spec(zones=[{"cylinders": 4194304, "sectors_per_track": 1048576}])),
     1, ["zones[0].cylinders", "more than 2097152 cylinders", "limit"]),
    ("2097152 cylinders x 8 heads (16777216 tracks: the limit)",
     js(spec(heads=8, zones=[{"cylinders": 2097152, "sectors_per_track": 1048576}])),
     0, None),
    ("2097152 cylinders x 9 heads",
     js(spec(heads=9, zones=[{"cylinders": 2097152, "sectors_per_track": 1048576}])),
     1, ["zones[0].cylinders", "more than 16777216 tracks", "limit"]),
    ("serpentine 2097152 cylinders x 9 heads",
     js(spec(heads=9, layout="serpentine", band_cylinders=1,
             zones=[{"cylinders": 2097152, "sectors_per_track": 1048576}])),
     1, ["zones[0].cylinders", "more than 10485760 tracks", "serpentine"]),
    # the truth's costliest shapes at the limits (issue 15 item 11, measured after issue 12):
    # zones inside one band (no band repeats), many small zones, per-surface sizes
    ("serpentine at the limit: 2 zones, 327680 cylinders x 32 heads in bands of 8192",
     js(spec(heads=32, layout="serpentine", band_cylinders=8192,
             zones=[{"cylinders": 163840, "sectors_per_track": 100000},
                    {"cylinders": 163840, "sectors_per_track": 90000}])),
     0, None),
    ("serpentine at the limit: 67 zones x 9780 cylinders x 16 heads",
     js(spec(heads=16, layout="serpentine", band_cylinders=100, zones=zones(67, 9780))),
     0, None),
    ("serpentine: a band of 8193 cylinders x 32 heads",
     js(spec(heads=32, layout="serpentine", band_cylinders=8193, zones=zones(2, 100))),
     1, ["band_cylinders", "more than the limit of 262144 tracks in a band"]),
    ("serpentine: 33 heads",
     js(spec(heads=33, layout="serpentine", band_cylinders=100, zones=zones(2, 100))),
     1, ["heads", "33 heads, more than the limit of 32 for the serpentine layout"]),
    ("serpentine: 68 zones x 16 heads",
     js(spec(heads=16, layout="serpentine", band_cylinders=100, zones=zones(68, 100))),
     1, ["zones", "68 zones x 16 heads, more than the limit of 1080"]),
    ("100,000 one-cylinder zones (4 MB)",
     js(spec(zones=[{"cylinders": 1, "sectors_per_track": 1000 + i % 7} for i in range(100000)])),
     1, ["more than the limit of 1048576"]),
    ("1025 zones", js(spec(zones=zones(1025, 1))), 1, ["zones", "1025 zones, more than the limit of 1024"]),
    ("1024 zones x 2048 cylinders x 8 heads (the limits)",
     js(spec(heads=8, zones=zones(1024, 2048))), 0, None),
    ("per-surface serpentine at the limit: 327680 cylinders x 32 heads in bands of 8192",
     js(spec(heads=32, layout="serpentine", band_cylinders=8192,
             zones=[{"cylinders": 327680,
                     "sectors_per_track": [1000 - (h % 7) * 8 for h in range(32)]}])),
     0, None),
    ("per-surface serpentine at the limit: 135 zones x 9709 cylinders x 8 heads",
     js(spec(heads=8, layout="serpentine", band_cylinders=100,
             zones=[{"cylinders": 9709, "sectors_per_track": [1000 - i // 2 - (h % 5) * 3
                                                                 for h in range(8)]}
                    for i in range(135)])),
     0, None),
    ("per-surface cylinder layout at the limit: 1024 zones x 2048 cylinders x 8 heads",
     js(spec(heads=8, zones=[{"cylinders": 2048, "sectors_per_track": [1000 - i // 2 - (h % 5) * 3
                                                                         for h in range(8)]}
                             for i in range(1024)])),
     0, None),
]

manifest = []
for i, (name, text, want, pattern) in enumerate(cases, 1):
    manifest.append((name, write("case%d.json" % i, text), want, pattern))
with open(os.path.join(tmp, "cases.json"), "w") as f:
    json.dump(manifest, f)
PY

"$py" - "$dg" "$tmp" <<'PY'
import json, os, resource, subprocess, sys

dg, tmp = sys.argv[1], sys.argv[2]
CPU_S, RSS_MB = 5.0, 400
cases = json.load(open(os.path.join(tmp, "cases.json")))
failed = 0
for i, (name, path, want, pattern) in enumerate(cases, 1):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for how in (["model", path], ["probe", "sim:" + path]):
        if want == 0 and how[0] == "probe":
            continue
        try:
            p = subprocess.run([dg] + how, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=60)
            rc, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        before = after
        rss_mb = after.ru_maxrss / 1024.0  # the largest child so far (KiB)
        lines = err.splitlines()
        why = ""
        if rc != want:
            why = "exit %s, expected %d" % (rc, want)
        elif want != 0 and (len(lines) != 1 or not lines[0].startswith("diskgeo: ")):
            why = "stderr is not one 'diskgeo:' line: %r" % err[:300]
        elif want != 0 and not all(w in lines[0] for w in pattern):
            why = "message %r does not name %r" % (lines[0], pattern)
        elif cpu > CPU_S:
            why = "%.2f s of CPU, more than %g" % (cpu, CPU_S)
        elif rss_mb > RSS_MB:
            why = "peak memory %.0f MB, more than %d" % (rss_mb, RSS_MB)
        status = "FAIL" if why else "ok  "
        failed += bool(why)
        print("%s %2d %-6s %-70s cpu %.3f s, peak %.0f MB%s" %
              (status, i, how[0], name, cpu, rss_mb, (": " + why) if why else ""))
        if lines and want != 0:
            print("          " + lines[0][:200])
print("test_spec_limits: %d cases, %d failed" % (len(cases), failed))
sys.exit(1 if failed else 0)
PY
exit $?
