#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --prometheus FILE against the real consumer: Debian's prometheus-node-exporter is started on
# 127.0.0.1 at a free port with only its textfile collector, reading a directory into which
# `diskgeo profile`, `bandwidth` and `seek` of sim: drives write their metrics; the scraped
# samples must equal the profile's JSON figures (to the 12 significant digits written), carry the
# labels device/model/serial/firmware, and the collector must report no scrape error. A run that
# fails before measuring leaves no file. Skipped (77) when the exporter is not installed.
#
# Usage: tests/test_prometheus.sh DISKGEO_BINARY
set -u
dg=$(readlink -f "${1:?usage: test_prometheus.sh DISKGEO}")
exporter=$(command -v prometheus-node-exporter || command -v node_exporter) ||
	{ echo "SKIP: prometheus-node-exporter is not installed"; exit 77; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
tmp=$(mktemp -d /tmp/diskgeo-prom.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

mkdir "$tmp/textfile"
"$dg" profile sim:hgst-7k1000 --json "$tmp/hgst.json" --prometheus "$tmp/textfile/hgst.prom" \
	>/dev/null 2>&1 || fail "profile --prometheus"
"$dg" bandwidth sim:cheetah-15k -n 64 --json "$tmp/cheetah.json" \
	--prometheus "$tmp/textfile/cheetah.prom" >/dev/null 2>&1 || fail "bandwidth --prometheus"
"$dg" seek sim:wd-red-4tb --json "$tmp/wd.json" --prometheus "$tmp/textfile/wd.prom" \
	>/dev/null 2>&1 || fail "seek --prometheus"
ls "$tmp/textfile" | grep -v '\.prom$' && fail "a temporary file was left in the textfile directory"
# A bad run leaves nothing behind, and a missing directory is refused before measuring.
"$dg" profile sim:hgst-7k1000 --prometheus "$tmp/nodir/x.prom" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "nodir" "$tmp/err" || fail "missing --prometheus directory: $(cat "$tmp/err")"

port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$exporter" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$tmp/textfile" >"$tmp/exporter.log" 2>&1 &
pid=$!
for i in $(seq 1 50); do
	curl -sf "http://127.0.0.1:$port/metrics" -o "$tmp/metrics.txt" && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/exporter.log"; fail "exporter exited"; break; }
	sleep 0.2
done
[ -s "$tmp/metrics.txt" ] || { fail "no scrape from 127.0.0.1:$port"; exit 1; }
grep '^diskgeo_' "$tmp/metrics.txt" | head -4

"$py" - "$tmp" <<'PY' || fail "scraped values (above)"
import json, re, sys
tmp = sys.argv[1]
samples = {}
for line in open(tmp + "/metrics.txt"):
    if line.startswith("#") or not line.strip():
        continue
    m = re.match(r'^(\w+)(\{(.*)\})? (\S+)$', line.strip())
    assert m, line
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
    samples.setdefault(m.group(1), []).append((labels, float(m.group(4))))
err = [v for l, v in samples["node_textfile_scrape_error"]]
assert err == [0.0], err
def one(name, device):
    got = [(l, v) for l, v in samples.get(name, []) if l.get("device") == device]
    assert len(got) == 1, (name, device, got)
    l = got[0][0]
    assert set(("device", "model", "serial", "firmware")) <= set(l), l
    return got[0]
def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))
checked = 0
for path, device in (("hgst.json", "sim:hgst-7k1000"), ("cheetah.json", "sim:cheetah-15k"), ("wd.json", "sim:wd-red-4tb")):
    doc = json.load(open(tmp + "/" + path))
    figs = {
        "diskgeo_device_size_bytes": doc["device"]["size_bytes"],
        "diskgeo_run_device_time_seconds": doc["run"]["device_time_s"],
        "diskgeo_run_complete": 1,
        "diskgeo_run_error_ranges": 0,
    }
    if "bandwidth" in doc:
        b = doc["bandwidth"]
        figs.update({"diskgeo_bandwidth_outer_mb_per_s": b["outer_mb_per_s"],
                     "diskgeo_bandwidth_inner_mb_per_s": b["inner_mb_per_s"],
                     "diskgeo_bandwidth_read_time_seconds": b["read_time_s"],
                     "diskgeo_bandwidth_zones": len(b["zones"])})
    else:
        assert not [l for l, v in samples.get("diskgeo_bandwidth_outer_mb_per_s", []) if l["device"] == device]
    if "seek" in doc:
        figs.update({"diskgeo_seek_average_ms": doc["seek"]["average_ms"],
                     "diskgeo_seek_full_stroke_ms": doc["seek"]["full_stroke_ms"],
                     "diskgeo_seek_track_to_track_ms": doc["seek"]["track_to_track_ms"],
                     "diskgeo_rotation_rpm": doc["rotation"]["rpm"]})
        for sp in doc["iops"]["spans"]:
            got = [v for l, v in samples["diskgeo_iops_span_iops"] if l["device"] == device
                   and l["start_bytes"] == str(sp["start_bytes"]) and l["span_bytes"] == str(sp["span_bytes"])]
            assert len(got) == 1 and close(got[0], sp["iops"]), (sp, got)
            checked += 1
    for name, want in figs.items():
        l, v = one(name, device)
        assert close(v, want), (name, device, v, want)
        assert l["model"] == doc["device"].get("model", ""), l
        checked += 1
print("scraped %d diskgeo samples equal to the JSON; textfile scrape error 0" % checked)
assert checked >= 30, checked
PY

[ "$fails" = 0 ] && echo "test_prometheus: all passed"
[ "$fails" = 0 ]
