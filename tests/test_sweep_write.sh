#!/bin/bash
# SPDX-License-Identifier: MIT
# sweep --write writes only inside the named range, guarded like bandwidth --write: on a
# 256 MiB file of random bytes, a write sweep of [64M, 128M) leaves every byte outside that
# range as it was, changes bytes inside it, says so before the first write, and reports the
# write cache state; refusals (no confirmation, a wrong name, no range) leave the file intact.
# Usage: test_sweep_write.sh DISKGEO
set -u
DG=${1:?usage: test_sweep_write.sh DISKGEO}
T=$(mktemp -d /tmp/test_sweep_write.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

head -c $((256 << 20)) /dev/urandom >"$T/victim.img"
cp "$T/victim.img" "$T/orig.img"
sum() { dd if="$1" bs=1M skip="$2" count="$3" status=none | md5sum | cut -d' ' -f1; }

for args in "--write --range 64M:128M" "--write --confirm-destroy=other.img --range 64M:128M" \
	"--write --confirm-destroy=victim.img"; do
	"$DG" sweep "$T/victim.img" $args --json "$T/x.json" >/dev/null 2>"$T/err"
	rc=$?
	[ "$rc" = 1 ] && cmp -s "$T/victim.img" "$T/orig.img" && [ ! -e "$T/x.json" ] &&
		pass "refused ($args): exit 1, file intact: $(grep -v 'regular file' "$T/err" | head -1)" ||
		fail "refusal ($args): rc=$rc"
done

"$DG" sweep "$T/victim.img" --write --confirm-destroy=victim.img --range 64M:128M \
	--seq-blocks 64k,1M --rand-blocks 4k,64k --qd 1,4 --rmw-ios 16 --time-budget 20s \
	--json "$T/w.json" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] && pass "write sweep exits 0" || fail "write sweep exit $rc: $(head -3 "$T/err")"
grep -q "sweep --write will overwrite blocks anywhere in \[67108864, 134217728) of $T/victim.img" "$T/err" &&
	pass "announced with its range before writing" || fail "no announcement"
[ "$(sum "$T/victim.img" 0 64)" = "$(sum "$T/orig.img" 0 64)" ] &&
	pass "bytes before the range unchanged" || fail "bytes before the range changed"
[ "$(sum "$T/victim.img" 128 128)" = "$(sum "$T/orig.img" 128 128)" ] &&
	pass "bytes after the range unchanged" || fail "bytes after the range changed"
[ "$(sum "$T/victim.img" 64 64)" != "$(sum "$T/orig.img" 64 64)" ] &&
	pass "bytes inside the range were written" || fail "nothing written inside the range"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["sweep"]
assert s["write_cache"] in ("write back", "write through", "unknown"), s.get("write_cache")
assert s["written_bytes"] > 0
assert all(c["op"] == "write" for c in s["cells"])
assert s["rmw"]["op"] == "write"
print("write_cache %s, %d bytes written" % (s["write_cache"], s["written_bytes"]))' "$T/w.json" &&
	pass "JSON: write cells, write_cache and written_bytes" || fail "JSON of the write sweep"
echo "test_sweep_write: $fails failures"
[ "$fails" -eq 0 ]
