#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `diskgeo probe PARTITION --profile DISK.json` end to end on a real partition (root: a loop
# device with partitions, else exit 77): a sparse file the size of sim:hgst-7k1000 with an MBR of
# two partitions (the first 10 % from 1 MiB, and 40-45 %), attached with `losetup -P`; probe of
# each partition with the drive's profile prints and writes its place (start/end bytes and % of
# the surface from sysfs) and its expected rates, checked against `diskgeo model --json` (the
# sequential rate within 1 % of the zones' rate over that range; the first partition's random
# IOPS within 2 % of the truth's first-10 % span). A profile of another size is refused (exit 1,
# one line naming both sizes). The loop device is detached at exit.
#
# Usage: tests/test_probe_place.sh DISKGEO_BINARY
set -u
dg=$(readlink -f "${1:?usage: test_probe_place.sh DISKGEO}")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (loop devices)"; exit 77; }
command -v losetup >/dev/null || { echo "SKIP: no losetup"; exit 77; }
tmp=$(mktemp -d /tmp/diskgeo-place.XXXXXX)
loop=
cleanup() {
	[ -n "$loop" ] && losetup -d "$loop"
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

"$dg" profile sim:hgst-7k1000 --json "$tmp/disk.json" >/dev/null 2>&1 || { echo "profile failed"; exit 1; }
"$dg" profile sim:cheetah-15k --json "$tmp/other.json" >/dev/null 2>&1 || { echo "profile failed"; exit 1; }
"$dg" model hgst-7k1000 --json "$tmp/model.json" >/dev/null || exit 1
size=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"]["size_bytes"])' "$tmp/disk.json")

# A sparse image with an MBR: partition 1 = sectors [2048, 10 %), partition 2 = [40 %, 45 %).
"$py" - "$tmp/disk.img" "$size" <<'PY' || exit 1
import struct, sys
path, size = sys.argv[1], int(sys.argv[2])
sectors = size // 512
def part(start, end):
    return struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", start, end - start)
p1 = (2048, sectors // 10 // 2048 * 2048)
p2 = (sectors * 40 // 100 // 2048 * 2048, sectors * 45 // 100 // 2048 * 2048)
mbr = bytearray(512)
mbr[446:446 + 16] = part(*p1)
mbr[462:462 + 16] = part(*p2)
mbr[510:512] = b"\x55\xaa"
with open(path, "wb") as f:
    f.write(mbr)
    f.truncate(size)
open(path + ".parts", "w").write("%d %d %d %d\n" % (p1 + p2))
PY
loop=$(losetup -f --show -P "$tmp/disk.img") || { echo "SKIP: losetup -P failed"; loop=; exit 77; }
# Without udev nothing creates /dev/loopNp1: ask for the partitions (partx) and make the nodes
# in our own directory from sysfs (diskgeo finds a device's sysfs entry by its number).
name=${loop#/dev/}
for i in $(seq 1 20); do
	[ -e "/sys/class/block/${name}p2/dev" ] && break
	[ "$i" = 5 ] && command -v partx >/dev/null && partx -a "$loop" 2>/dev/null
	sleep 0.2
done
[ -e "/sys/class/block/${name}p2/dev" ] || { echo "SKIP: no partitions on $loop"; exit 77; }
for n in 1 2; do
	IFS=: read -r maj min <"/sys/class/block/${name}p$n/dev"
	mknod "$tmp/part$n" b "$maj" "$min" || { echo "SKIP: mknod failed"; exit 77; }
done
read -r s1 e1 s2 e2 <"$tmp/disk.img.parts"

for n in 1 2; do
	"$dg" probe "$tmp/part$n" --profile "$tmp/disk.json" >"$tmp/p$n.txt" 2>"$tmp/p$n.err" ||
		fail "probe p$n: $(cat "$tmp/p$n.err")"
	"$dg" probe "$tmp/part$n" --profile "$tmp/disk.json" --json "$tmp/p$n.json" >/dev/null 2>&1 ||
		fail "probe p$n --json"
	grep -q "^place on the surface: bytes " "$tmp/p$n.txt" || fail "p$n: no place line"
	grep -q "^expected sequential read: " "$tmp/p$n.txt" || fail "p$n: no sequential line"
	grep -q "^expected random 4096-byte reads at QD 1: " "$tmp/p$n.txt" || fail "p$n: no random line"
done
cat "$tmp/p1.txt" | tail -3
"$py" - "$tmp" "$s1" "$e1" "$s2" "$e2" <<'PY' || fail "placement figures (above)"
import json, sys
tmp = sys.argv[1]
s1, e1, s2, e2 = (int(x) * 512 for x in sys.argv[2:6])
m = json.load(open(tmp + "/model.json"))
size = m["capacity_bytes"]
def rate(a, b):
    t = 0
    for z in m["zones"]:
        lo, hi = max(a, z["start_bytes"]), min(b, z["end_bytes"])
        if hi > lo:
            t += (hi - lo) / z["mb_per_s"]
    return (b - a) / t
for n, (s, e) in ((1, (s1, e1)), (2, (s2, e2))):
    pl = json.load(open("%s/p%d.json" % (tmp, n)))["placement"]
    assert pl["start_bytes"] == s and pl["end_bytes"] == e, (pl, s, e)
    assert pl["disk_bytes"] == size
    assert abs(pl["start_percent"] - 100 * s / size) < 1e-3 and abs(pl["end_percent"] - 100 * e / size) < 1e-3
    truth = rate(s, e)
    assert abs(pl["seq_mb_per_s"] / truth - 1) < 0.01, (pl["seq_mb_per_s"], truth)
    print("p%d: %.2f-%.2f %%, %.1f MB/s (truth %.1f), %.1f IOPS from %s" % (
        n, pl["start_percent"], pl["end_percent"], pl["seq_mb_per_s"], truth,
        pl["random_iops"], pl["random_from"]))
first10 = [r for r in m["random_4k"] if r["start_bytes"] == 0 and abs(r["span_bytes"] - size / 10) < size / 1000]
pl = json.load(open(tmp + "/p1.json"))["placement"]
assert abs(pl["random_iops"] / first10[0]["iops"] - 1) < 0.02, (pl["random_iops"], first10)
assert json.load(open(tmp + "/p2.json"))["placement"]["random_from"] == "seek curve"
PY

# A profile of another disk: refused before anything is printed.
"$dg" probe "$tmp/part1" --profile "$tmp/other.json" >"$tmp/o.txt" 2>"$tmp/o.err"
rc=$?
[ "$rc" = 1 ] || fail "other profile: exit $rc"
[ "$(wc -l <"$tmp/o.err")" = 1 ] && grep -q "other.json: profiles a 300000000000-byte disk, but .* (the partition's disk) holds $size bytes" "$tmp/o.err" ||
	fail "other profile: $(cat "$tmp/o.err")"
[ -s "$tmp/o.txt" ] && fail "other profile: printed a table"
"$dg" probe "$tmp/part1" --profile "$tmp/missing.json" 2>"$tmp/m.err"
[ $? = 1 ] && grep -q "missing.json: No such file or directory" "$tmp/m.err" || fail "missing profile"

[ "$fails" = 0 ] && echo "test_probe_place: all passed"
[ "$fails" = 0 ]
