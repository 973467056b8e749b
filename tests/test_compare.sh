#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `diskgeo compare` end to end on sim: drives (virtual time, deterministic):
# - two seeds of sim:hgst-7k1000: no significant difference, no weak region, exit 0;
# - the same drive with a weak stretch (zone 5's middle ~38 % of cylinders re-recorded at 8/9 of
#   its sectors per track, about -11 %, on more cylinders so that every other LBA stays where it
#   was): compare finds the weak region within 1 % of its true byte range (from `model --json` of
#   that spec), the significant zone and zone-count differences, names the drive, exits 5;
#   against `diskgeo model --json` of the healthy spec as --baseline the same;
# - three drives, one weak: only the weak one stands apart;
# - bad files and bad options: one line naming the file and the reason, exit 1, no JSON written.
#
# Usage: tests/test_compare.sh DISKGEO_BINARY SOURCE_DIR
set -u
dg=$(readlink -f "${1:?usage: test_compare.sh DISKGEO SOURCE_DIR}")
src=${2:?usage: test_compare.sh DISKGEO SOURCE_DIR}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d /tmp/diskgeo-compare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# The weak copy of the preset: zone 5 split into three, its middle part re-recorded at 8/9 of
# its sectors per track (whole physical sectors) on proportionally more cylinders, so that the
# middle holds exactly the same sectors and every other LBA stays where it was.
"$py" - "$src/presets/hgst-7k1000.json" "$tmp/weak.json" >"$tmp/weak_spt" <<'PY' || exit 1
import json, math, sys
s = json.load(open(sys.argv[1]))
s["name"] = "hgst-7k1000-weak"
z = s["zones"]
cyl, spt = z[4]["cylinders"], z[4]["sectors_per_track"]
assert isinstance(spt, int) and set(z[4]) == {"cylinders", "sectors_per_track"}, z[4]
unit = s.get("physical_sector_bytes", s["logical_sector_bytes"]) // s["logical_sector_bytes"]
assert spt % unit == 0, (spt, unit)
weak = round(spt * 8 / 9 / unit) * unit
# the middle's cylinder count: a multiple of weak/gcd, so that mid * spt / weak is whole
step = weak // math.gcd(spt, weak)
mid = max(step, round(cyl * 0.376 / step) * step)
assert mid < cyl - 2, (mid, cyl)
first = (cyl - mid) // 2
z[4:5] = [{"cylinders": first, "sectors_per_track": spt},
          {"cylinders": mid * spt // weak, "sectors_per_track": weak},
          {"cylinders": cyl - mid - first, "sectors_per_track": spt}]
geometry = sum(x["cylinders"] * x["sectors_per_track"] * s["heads"] for x in z)
assert geometry >= s.get("capacity_sectors", 0), (geometry, s.get("capacity_sectors"))
json.dump(s, open(sys.argv[2], "w"))
print(weak)
PY
export WEAK_SPT=$(cat "$tmp/weak_spt")

"$dg" model hgst-7k1000 --json "$tmp/model.json" >/dev/null || fail "model hgst-7k1000"
"$dg" model "$tmp/weak.json" --json "$tmp/model-weak.json" >/dev/null || fail "model weak"
for run in "a sim:hgst-7k1000 --seed 1" "b sim:hgst-7k1000 --seed 7" \
	"c sim:hgst-7k1000 --seed 3" "w sim:$tmp/weak.json --seed 5"; do
	set -- $run
	"$dg" profile "$2" $3 $4 --json "$tmp/$1.json" >/dev/null 2>"$tmp/$1.err" ||
		fail "profile $2: $(cat "$tmp/$1.err")"
done

# check NAME EXPECTED_EXIT -- ARGS...: runs compare --json, then the Python assertion on stdin
check() {
	local name=$1 want=$2 rc
	shift 3
	"$dg" compare "$@" --json "$tmp/$name.cmp.json" >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	[ "$rc" = "$want" ] || fail "$name: exit $rc, expected $want: $(cat "$tmp/$name.err")"
	"$py" - "$tmp/$name.cmp.json" "$tmp/model-weak.json" || fail "$name: assertion (above)"
}

check seeds 0 -- "$tmp/a.json" "$tmp/b.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["schema"] == "diskgeo.compare/1", c["schema"]
sig = [d for d in c["differences"] if d["significant"]]
assert not sig, sig
assert not c["weak_regions"], c["weak_regions"]
assert len(c["differences"]) >= 25, len(c["differences"])
# the uncertainty that makes them agree stays small: no bandwidth figure above 0.4 %
bw = [d for d in c["differences"] if d["figure"].startswith("bandwidth.")]
assert max(d["noise_percent"] for d in bw) < 0.4, max(bw, key=lambda d: d["noise_percent"])
assert [p["device"]["model"] for p in c["profiles"]] == ["hgst-7k1000"] * 2
figs = {d["figure"] for d in c["differences"]}
for f in ("bandwidth.outer_mb_per_s", "bandwidth.zones.mb_per_s", "rotation.rpm",
          "seek.average_ms", "seek.full_stroke_ms", "seek.track_to_track_ms", "iops.spans.iops",
          "bandwidth.read_time_s"):
    assert f in figs, f
print("seeds: %d figures, none significant" % len(c["differences"]))
PY

weak_assert='
import json, os, sys
c = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))
truth = [z for z in m["zones"] if z["sectors_per_track"] == int(os.environ["WEAK_SPT"])]
assert len(truth) == 1
t0, t1 = truth[0]["start_bytes"], truth[0]["end_bytes"]
w = [r for r in c["weak_regions"] if r["path"].endswith("/w.json")]
assert len(w) == 1, c["weak_regions"]
w = w[0]
span = t1 - t0
assert abs(w["start_bytes"] - t0) < 0.01 * span and abs(w["end_bytes"] - t1) < 0.01 * span, (w, t0, t1)
assert abs(w["mb_per_s"] / truth[0]["mb_per_s"] - 1) < 0.01, (w, truth[0]["mb_per_s"])
assert w["expected_mb_per_s"] > w["mb_per_s"] * 1.1, w
others = [r for r in c["weak_regions"] if not r["path"].endswith("/w.json")]
assert not others, others
sig = {(d["figure"], d.get("detail")) for d in c["differences"] if d["significant"]}
assert ("bandwidth.zones.mb_per_s", "zone 5") in sig, sig
assert ("bandwidth.zone_count", None) in sig, sig
# the weak stretch makes the whole surface 0.29 % slower to read: small, and still found
assert ("bandwidth.read_time_s", None) in sig, sig
apart = [p["path"].rsplit("/", 1)[1] for p in c["profiles"] if p["stands_apart"]]
assert apart == ["w.json"], apart
assert c["differs"] is True
print("weak region %d-%d (truth %d-%d), %.1f MB/s (truth %.1f), expected %.1f; apart %s" % (
    w["start_bytes"], w["end_bytes"], t0, t1, w["mb_per_s"], truth[0]["mb_per_s"],
    w["expected_mb_per_s"], apart))
'
check weak 5 -- "$tmp/a.json" "$tmp/w.json" <<<"$weak_assert"
check baseline 5 -- "$tmp/w.json" --baseline "$tmp/model.json" <<<"$weak_assert"
check fleet 5 -- "$tmp/a.json" "$tmp/w.json" "$tmp/b.json" "$tmp/c.json" <<<"$weak_assert"
check healthy-baseline 0 -- "$tmp/a.json" "$tmp/b.json" --baseline "$tmp/model.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["reference"] == "baseline" and c["baseline"].endswith("/model.json")
assert not [d for d in c["differences"] if d["significant"]], c["differences"]
assert not c["weak_regions"]
print("healthy vs model: none significant")
PY
grep -q "stands apart: \[1\] .*/w.json" "$tmp/weak.out" || fail "weak: table does not name w.json"
grep -q "exit status 5" "$tmp/weak.out" || fail "weak: table does not say exit status 5"

# --tolerance 20: the 4.9 % zone difference no longer counts, the 12.5 % zone count does not
# either, but the weak region still makes it differ.
"$dg" compare "$tmp/a.json" "$tmp/w.json" --tolerance 20 --json - >"$tmp/tol.json"
[ $? = 5 ] || fail "tolerance 20: exit not 5"
"$py" -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert not [d for d in c["differences"] if d["beyond_tolerance"]]
assert len(c["weak_regions"]) == 1' "$tmp/tol.json" || fail "tolerance 20"

# The uncertainty of a bandwidth figure, on two hand-made profiles that differ by +0.5 % in
# every rate: zone 1 has ten samples exactly at its rate (standard error 0: the method's
# resolution, 0.1 %, alone), zone 2 four samples at +-1 % (standard error sqrt(4/3)/sqrt(4)
# = 0.577 %, with the floor 0.586 %); the read time weighs the zones by their read time. So
# the +0.5 % of zone 1 is significant (3 x 0.141 %) and the same +0.5 % of zone 2 is not.
"$py" - "$tmp" <<'PY' || fail "hand-made profiles"
import json, sys
t = sys.argv[1]
def doc(k):
    s = [{"offset_bytes": i * 10**8, "length_bytes": 10**6, "mb_per_s": 100 * k} for i in range(10)]
    s += [{"offset_bytes": 10**9 + i * 2 * 10**8, "length_bytes": 10**6,
           "mb_per_s": 50 * k * (1.01 if i % 2 == 0 else 0.99)} for i in range(4)]
    z = [{"start_bytes": 0, "end_bytes": 10**9, "mb_per_s": 100 * k},
         {"start_bytes": 10**9, "end_bytes": 2 * 10**9, "mb_per_s": 50 * k}]
    return {"schema": "diskgeo.profile/1", "device": {"size_bytes": 2 * 10**9, "model": "x"},
            "bandwidth": {"samples": s, "zones": z, "outer_mb_per_s": 100 * k,
                          "inner_mb_per_s": 50 * k, "noise_percent": 0.1}}
json.dump(doc(1), open(t + "/h1.json", "w"))
json.dump(doc(1.005), open(t + "/h2.json", "w"))
PY
"$dg" compare "$tmp/h1.json" "$tmp/h2.json" --json "$tmp/h.json" >/dev/null
[ $? = 0 ] || fail "hand-made profiles: exit not 0"
"$py" - "$tmp/h.json" <<'PY' || fail "hand-made profiles: uncertainty (above)"
import json, math, sys
c = json.load(open(sys.argv[1]))
d = {(x["figure"], x.get("detail")): x for x in c["differences"]}
u1, u2 = 0.1, math.sqrt((math.sqrt(4 / 3) / 2) ** 2 + 0.1 ** 2)
def read(k):  # one profile's read-time uncertainty: zones weighted by their read time
    t1, t2 = 1e9 / (100 * k), 1e9 / (50 * k)
    return math.hypot(t1 * u1, t2 * u2) / (t1 + t2)
want = {("bandwidth.zones.mb_per_s", "zone 1"): (math.sqrt(2) * u1, True),
        ("bandwidth.outer_mb_per_s", None): (math.sqrt(2) * u1, True),
        ("bandwidth.zones.mb_per_s", "zone 2"): (math.sqrt(2) * u2, False),
        ("bandwidth.inner_mb_per_s", None): (math.sqrt(2) * u2, False),
        ("bandwidth.read_time_s", None): (math.hypot(read(1), read(1.005)), False)}
for key, (noise, sig) in want.items():
    x = d[key]
    assert abs(x["noise_percent"] - noise) < 1e-5 and x["significant"] is sig, (key, x, noise)
    assert abs(abs(x["delta_percent"]) - 0.5) < 0.003, x
print("hand-made: zone 1 %.4f %% (significant), zone 2 %.4f %%, read time %.4f %%" % (
    d[("bandwidth.zones.mb_per_s", "zone 1")]["noise_percent"],
    d[("bandwidth.zones.mb_per_s", "zone 2")]["noise_percent"],
    d[("bandwidth.read_time_s", None)]["noise_percent"]))
PY

# Bad input: one line that names the file and the reason, exit 1, no output file.
bad() {
	local want=$1 text=$2 out
	printf '%s' "$text" >"$tmp/bad.json"
	rm -f "$tmp/out.json"
	"$dg" compare "$tmp/a.json" "$tmp/bad.json" --json "$tmp/out.json" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ "$rc" = 1 ] || fail "bad input ($text): exit $rc"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "bad input ($text): not one line: $(cat "$tmp/err")"
	grep -qF "bad.json: $want" "$tmp/err" || fail "bad input ($text): $(cat "$tmp/err")"
	[ ! -e "$tmp/out.json" ] || fail "bad input ($text): wrote a JSON file"
}
P='"schema":"diskgeo.profile/1","device":{"size_bytes":1000}'
bad "not valid JSON" '{"schema":'
bad "not valid JSON" "$(printf '{"a":"\033[2J\001"')"
bad "not a diskgeo profile" '[1,2]'
bad 'schema: "x" is neither' '{"schema":"x"}'
bad "device.size_bytes: missing" '{"schema":"diskgeo.profile/1"}'
bad "device.size_bytes: -5 is out of range" '{"schema":"diskgeo.profile/1","device":{"size_bytes":-5}}'
bad "bandwidth.samples[0].length_bytes: 20 is out of range" \
	"{$P,\"bandwidth\":{\"samples\":[{\"offset_bytes\":990,\"length_bytes\":20,\"mb_per_s\":5}]}}"
bad "bandwidth.samples[1]: not an object" \
	"{$P,\"bandwidth\":{\"samples\":[{\"offset_bytes\":0,\"length_bytes\":20,\"mb_per_s\":5},7]}}"
bad "bandwidth.zones[1]: overlaps or precedes" \
	"{$P,\"bandwidth\":{\"zones\":[{\"start_bytes\":500,\"end_bytes\":600,\"mb_per_s\":5},{\"start_bytes\":0,\"end_bytes\":100,\"mb_per_s\":5}]}}"
bad "bandwidth.zones[0].mb_per_s: -1 is out of range" \
	"{$P,\"bandwidth\":{\"zones\":[{\"start_bytes\":0,\"end_bytes\":100,\"mb_per_s\":-1}]}}"
bad "bandwidth.samples: not an array" "{$P,\"bandwidth\":{\"samples\":{}}}"
bad "rotation.rpm: not a number" "{$P,\"rotation\":{\"rpm\":\"7200\"}}"
bad "iops.spans[0].span_bytes: 2000 is out of range" \
	"{$P,\"iops\":{\"spans\":[{\"start_bytes\":0,\"span_bytes\":2000,\"block_bytes\":4096,\"iops\":80}]}}"
bad "sweep.cells[0].kind: not one of the known words" \
	"{$P,\"sweep\":{\"cells\":[{\"kind\":\"x\",\"op\":\"read\",\"where\":\"outer\",\"block_bytes\":4096,\"qd\":1}]}}"
bad "device.model: longer than 256 bytes" "{\"schema\":\"diskgeo.profile/1\",\"device\":{\"size_bytes\":1000,\"model\":\"$(head -c 300 /dev/zero | tr '\0' x)\"}}"
bad "not valid JSON" "{$P,\"schema\":\"diskgeo.profile/1\"}" # duplicate key
printf '{}' >"$tmp/e.json"
"$dg" compare "$tmp/a.json" "$tmp/missing.json" 2>"$tmp/err"
[ $? = 1 ] && grep -q "missing.json: No such file or directory" "$tmp/err" || fail "missing file"
"$dg" compare "$tmp/a.json" "$tmp" 2>"$tmp/err"
[ $? = 1 ] && grep -q ": not a regular file" "$tmp/err" || fail "directory as profile"
"$dg" compare "$tmp/a.json" 2>"$tmp/err"
[ $? = 1 ] && grep -q "needs two profiles, or one and --baseline" "$tmp/err" || fail "one profile"
"$dg" compare "$tmp/a.json" "$tmp/b.json" --tolerance -3 2>"$tmp/err"
[ $? = 1 ] && grep -q "tolerance '-3' is not a percentage" "$tmp/err" || fail "tolerance -3"
"$dg" compare "$tmp/a.json" "$tmp/b.json" --json "$tmp/nodir/x.json" 2>"$tmp/err"
[ $? = 1 ] || fail "json into a missing directory"

# diskgeo summary --jsonl: one line per profile with its headline figures; a bad file is one
# line on stderr, skipped, exit 1.
printf '[1]' >"$tmp/notprofile.json"
"$dg" summary "$tmp/a.json" "$tmp/notprofile.json" "$tmp/w.json" "$tmp/model.json" --jsonl \
	>"$tmp/sum.jsonl" 2>"$tmp/sum.err"
[ $? = 1 ] || fail "summary with a bad file: exit not 1"
[ "$(wc -l <"$tmp/sum.err")" = 1 ] && grep -q "notprofile.json: not a diskgeo profile" "$tmp/sum.err" ||
	fail "summary bad file: $(cat "$tmp/sum.err")"
"$py" - "$tmp" <<'PY' || fail "summary --jsonl (above)"
import json, sys
t = sys.argv[1]
lines = [json.loads(l) for l in open(t + "/sum.jsonl")]
assert [l["path"].rsplit("/", 1)[1] for l in lines] == ["a.json", "w.json", "model.json"], lines
a = json.load(open(t + "/a.json"))
l = lines[0]
assert l["schema"] == "diskgeo.profile/1" and l["model"] == "hgst-7k1000"
assert l["size_bytes"] == a["device"]["size_bytes"]
assert abs(l["outer_mb_per_s"] - a["bandwidth"]["outer_mb_per_s"]) < 1e-6
assert abs(l["read_time_s"] - a["bandwidth"]["read_time_s"]) < 1e-2
assert abs(l["average_ms"] - a["seek"]["average_ms"]) < 1e-6
assert abs(l["rpm"] - a["rotation"]["rpm"]) < 1e-6 and l["zones"] == len(a["bandwidth"]["zones"])
whole = [s for s in a["iops"]["spans"] if s["start_bytes"] == 0 and s["span_bytes"] == a["device"]["size_bytes"]]
assert abs(l["iops"] - whole[0]["iops"]) < 1e-6
assert lines[1]["zones"] == 18 and lines[2]["schema"] == "diskgeo.model/1"
m = json.load(open(t + "/model.json"))
assert abs(lines[2]["read_time_s"] / lines[0]["read_time_s"] - 1) < 0.001
print("summary: %d lines" % len(lines))
PY
"$dg" summary 2>"$tmp/err"
[ $? = 1 ] && grep -q "summary: no profile given" "$tmp/err" || fail "summary without files"
# the table's row: a.json's own figures as printed, and they are the truth's within 0.5 %
"$dg" summary "$tmp/a.json" >"$tmp/sum.txt"
"$py" - "$tmp/sum.txt" "$tmp/a.json" "$tmp/model.json" <<'PY' || fail "summary table: $(cat "$tmp/sum.txt")"
import json, re, sys
row = open(sys.argv[1]).read().splitlines()[1]
a = json.load(open(sys.argv[2]))["bandwidth"]
m = json.load(open(sys.argv[3]))
f = re.match(r"^(\S+) +hgst-7k1000 +1\.00 TB +([\d.]+) +([\d.]+) +(\d+) ", row)
assert f and f.group(1) == sys.argv[2], row
outer, inner, zones = float(f.group(2)), float(f.group(3)), int(f.group(4))
assert (f.group(2), f.group(3)) == ("%.1f" % a["outer_mb_per_s"], "%.1f" % a["inner_mb_per_s"]), row
assert zones == len(a["zones"]) == len(m["recording_zones"]), (zones, len(m["recording_zones"]))
assert abs(outer / m["outer_mb_per_s"] - 1) < 0.005 and abs(inner / m["inner_mb_per_s"] - 1) < 0.005, (
    row, m["outer_mb_per_s"], m["inner_mb_per_s"])
PY

[ "$fails" = 0 ] && echo "test_compare: all passed"
[ "$fails" = 0 ]
