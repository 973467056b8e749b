#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/ansible/diskgeo-fleet.yml for real, with Debian's ansible-core against localhost
# (-i localhost, -c local) on three sim: drives: the preset, an identical copy under another name
# and a copy with a weak stretch (zone 5's middle re-recorded at fewer sectors per track). The
# playbook must succeed (a fleet that differs is reported, not failed), fetch the three profiles
# to DIR/localhost/, and leave on the controller a diskgeo.compare/1 document that names the weak
# drive alone as standing apart with its weak region, the table, and a JSON Lines summary of the
# three drives. With diskgeo_fail_on_difference it must fail. Skipped (77) without
# ansible-playbook.
#
# Usage: tests/test_ansible.sh DISKGEO_BINARY SOURCE_DIR
set -u
dg=$(readlink -f "${1:?usage: test_ansible.sh DISKGEO SOURCE_DIR}")
src=$(readlink -f "${2:?usage: test_ansible.sh DISKGEO SOURCE_DIR}")
command -v ansible-playbook >/dev/null || { echo "SKIP: ansible-playbook is not installed"; exit 77; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d /tmp/diskgeo-ansible.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# The weak copy: zone 5's middle ~38 % of cylinders at 8/9 of its sectors per track (whole
# physical sectors), on proportionally more cylinders so that every other LBA stays put.
"$py" - "$src/presets/hgst-7k1000.json" "$tmp" <<'PY' || exit 1
import json, math, sys
s = json.load(open(sys.argv[1]))
s["name"] = "hgst-copy"
json.dump(s, open(sys.argv[2] + "/hgst-copy.json", "w"))
s["name"] = "hgst-weak"
z = s["zones"]
cyl, spt = z[4]["cylinders"], z[4]["sectors_per_track"]
assert isinstance(spt, int) and set(z[4]) == {"cylinders", "sectors_per_track"}, z[4]
unit = s.get("physical_sector_bytes", s["logical_sector_bytes"]) // s["logical_sector_bytes"]
weak = round(spt * 8 / 9 / unit) * unit
step = weak // math.gcd(spt, weak)
mid = max(step, round(cyl * 0.376 / step) * step)
first = (cyl - mid) // 2
z[4:5] = [{"cylinders": first, "sectors_per_track": spt},
          {"cylinders": mid * spt // weak, "sectors_per_track": weak},
          {"cylinders": cyl - mid - first, "sectors_per_track": spt}]
assert sum(x["cylinders"] * x["sectors_per_track"] * s["heads"] for x in z) >= s.get("capacity_sectors", 0)
json.dump(s, open(sys.argv[2] + "/hgst-weak.json", "w"))
open(sys.argv[2] + "/weak_spt", "w").write(str(weak))
PY
"$dg" model "$tmp/hgst-weak.json" --json "$tmp/model-weak.json" >/dev/null || fail "model hgst-weak"

# Ansible's own state stays in the scratch directory.
export HOME="$tmp" ANSIBLE_LOCAL_TEMP="$tmp/.ansible-local" ANSIBLE_REMOTE_TEMP="$tmp/.ansible-remote"
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_LOCALHOST_WARNING=0
vars=$("$py" -c 'import json, sys; t = sys.argv[2]; print(json.dumps({
    "diskgeo_disks": ["sim:hgst-7k1000", "sim:" + t + "/hgst-copy.json", "sim:" + t + "/hgst-weak.json"],
    "diskgeo_binary": sys.argv[1], "diskgeo_remote_dir": t + "/remote",
    "diskgeo_fetch_dir": t + "/fleet", "diskgeo_prometheus_dir": t + "/prom"}))' "$dg" "$tmp")
mkdir "$tmp/prom"
cd "$tmp" || exit 1
ansible-playbook -i localhost, -c local "$src/tools/ansible/diskgeo-fleet.yml" -e "$vars" \
	>"$tmp/play.log" 2>&1 || { tail -40 "$tmp/play.log"; fail "playbook failed"; }
grep -E '^localhost +: ok=' "$tmp/play.log"

for f in hgst-7k1000 hgst-copy hgst-weak; do
	[ -s "$tmp/fleet/localhost/$f.json" ] || fail "profile $f not fetched"
	[ -s "$tmp/prom/diskgeo-$f.prom" ] || fail "metrics of $f not written"
done
"$py" - "$tmp/fleet" "$tmp" <<'PY' || fail "fleet results (above)"
import json, sys
d = sys.argv[1]
weak = int(open(sys.argv[2] + "/weak_spt").read())
truth = [z for z in json.load(open(sys.argv[2] + "/model-weak.json"))["zones"]
         if z["sectors_per_track"] == weak]
assert len(truth) == 1, truth
t0, t1 = truth[0]["start_bytes"], truth[0]["end_bytes"]
c = json.load(open(d + "/fleet-compare.json"))
assert c["schema"] == "diskgeo.compare/1" and c["reference"] == "median" and c["differs"]
apart = [p["path"].rsplit("/", 1)[1] for p in c["profiles"] if p["stands_apart"]]
assert apart == ["hgst-weak.json"], apart
w = c["weak_regions"]
assert len(w) == 1 and w[0]["path"].endswith("/hgst-weak.json"), w
# the truth: zone 5's middle stretch (from model --json of the weak spec), within 1 %
assert abs(w[0]["start_bytes"] - t0) < 0.01 * (t1 - t0) and abs(w[0]["end_bytes"] - t1) < 0.01 * (t1 - t0), (w, t0, t1)
lines = [json.loads(l) for l in open(d + "/fleet-summary.jsonl")]
assert sorted(l["model"] for l in lines) == ["hgst-7k1000", "hgst-copy", "hgst-weak"], lines
assert all(l["size_bytes"] == 1000204886016 and l["zones"] >= 16 for l in lines), lines
assert "stands apart: [2]" in open(d + "/fleet-compare.txt").read()
print("fleet: %s stands apart, weak %d-%d (truth %d-%d); %d summary lines" % (apart[0], w[0]["start_bytes"], w[0]["end_bytes"], t0, t1, len(lines)))
PY

# Asked to fail on a difference, the play fails at the comparison.
ansible-playbook -i localhost, -c local "$src/tools/ansible/diskgeo-fleet.yml" -e "$vars" \
	-e diskgeo_fail_on_difference=true >"$tmp/play2.log" 2>&1 && fail "diskgeo_fail_on_difference did not fail"
grep -q 'TASK \[Compare them\]' "$tmp/play2.log" && grep -q 'fatal: \[localhost\]' "$tmp/play2.log" ||
	fail "the second play did not fail at the comparison"
# No disks: the role stops with its message.
ansible-playbook -i localhost, -c local "$src/tools/ansible/diskgeo-fleet.yml" \
	-e "{\"diskgeo_binary\": \"$dg\"}" >"$tmp/play3.log" 2>&1 && fail "empty diskgeo_disks passed"
grep -q "diskgeo_disks is empty" "$tmp/play3.log" || fail "empty diskgeo_disks: no message"

[ "$fails" = 0 ] && echo "test_ansible: all passed"
[ "$fails" = 0 ]
