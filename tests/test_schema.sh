#!/bin/bash
# SPDX-License-Identifier: MIT
#
# docs/profile.schema.json describes what diskgeo writes: every kind of profile the test suite
# has diskgeo write (probe, read sequential and random, bandwidth of sim:, of a file, of a 4Kn
# drive, the write curve of a file, seek of sim: and of a flat file, profile of every preset,
# of a device too small for seek, with defects (errors[]), an interrupted run) validates against
# it with python3-jsonschema, as does docs/wd-red-4tb.json (the README's profile); warning_codes[] pairs with
# warnings[]; and documents that break the contract are refused (the negative controls).
#
#   test_schema.sh DISKGEO SOURCE_DIR
#
# Exit 0 when all hold, 1 otherwise, 77 when /usr/bin/python3 has no jsonschema.
set -u
DISKGEO=${1:?usage: test_schema.sh DISKGEO SOURCE_DIR}
SRC=${2:?usage: test_schema.sh DISKGEO SOURCE_DIR}
PY=/usr/bin/python3
SCHEMA=$SRC/docs/profile.schema.json

if ! "$PY" -c 'import jsonschema' 2>/dev/null; then
	echo "test_schema: $PY cannot import jsonschema (apt install python3-jsonschema); skipped"
	exit 77
fi
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0

# gen NAME EXPECTED_RC ARGS...: diskgeo ARGS... --json $T/NAME.json, which must exit EXPECTED_RC
gen() {
	local name=$1 want=$2
	shift 2
	"$DISKGEO" "$@" --json "$T/$name.json" >/dev/null 2>"$T/$name.err"
	local rc=$?
	if [ "$rc" != "$want" ] || [ ! -s "$T/$name.json" ]; then
		echo "FAIL: diskgeo $* exited $rc (want $want): $(head -n 3 "$T/$name.err")" >&2
		fails=$((fails + 1))
	fi
}

gen probe 0 probe sim:wd-red-4tb
gen probe4k 0 probe sim:seagate-st4000vn006
gen read 0 read sim:wd-red-4tb -l 64M
gen read_random 0 read sim:hgst-7k1000 --random --span 10GB -l 256k
gen bandwidth 0 bandwidth sim:wd-red-4tb -n 64
gen bandwidth4k 0 bandwidth sim:seagate-st4000vn006 -n 64 --no-refine
gen seek 0 seek sim:cheetah-15k --time-budget 10s
gen sweep 0 sweep sim:wd-red-4tb --time-budget 10s
gen sweep_write 0 sweep sim:hgst-7k1000 --write --confirm-destroy=hgst-7k1000 --range 1G:3G --time-budget 5s
for p in wd-red-4tb hgst-7k1000 seagate-st4000vn006 cheetah-15k; do
	gen "profile_$p" 0 profile "sim:$p" -n 64 --seek-budget 10s
done
gen profile_noseek 0 profile sim:wd-red-4tb --no-seek -n 32
gen profile_nobw 0 profile sim:wd-red-4tb --no-bandwidth --no-spans
gen defects 3 profile "sim:$SRC/tests/faults/defects.json" -n 64 --seek-budget 5s
dd if=/dev/urandom of="$T/disk.img" bs=1M count=80 status=none
gen file_bw 0 bandwidth "$T/disk.img" -n 8 -s 1M
gen file_seek 0 seek "$T/disk.img" --time-budget 3s --no-spans
dd if=/dev/urandom of="$T/small.img" bs=1M count=16 status=none
gen small 0 profile "$T/small.img" -n 8 -s 1M
cp "$T/small.img" "$T/victim.img"
gen write 0 bandwidth "$T/victim.img" --write --confirm-destroy=victim.img -n 4 -s 1M
# an interrupted run: a seek with a long budget on a file, stopped after a second
"$DISKGEO" seek "$T/disk.img" --time-budget 10m --json "$T/interrupted.json" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 4 ] || {
	echo "FAIL: the interrupted seek exited $rc, not 4" >&2
	fails=$((fails + 1))
}

"$PY" - "$SCHEMA" "$T" "$SRC/docs/wd-red-4tb.json" <<'PYEOF' || fails=$((fails + 1))
import glob, json, os, sys
import jsonschema

schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
v = cls(schema)
bad = 0
written = sorted(glob.glob(os.path.join(sys.argv[2], "*.json")))
committed = sys.argv[3:]
if len(written) < 18:
    print("FAIL: only %d profiles written" % len(written), file=sys.stderr)
    bad += 1
for path in written + committed:
    doc = json.load(open(path))
    if path in committed and "warning_codes" not in doc:
        doc["warning_codes"] = ["other"] * len(doc.get("warnings", []))  # written before 14
    errs = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
    for e in errs[:3]:
        print("FAIL: %s: %s at %s" % (os.path.basename(path), e.message,
                                      "/".join(map(str, e.path))), file=sys.stderr)
    bad += bool(errs)
    if len(doc["warning_codes"]) != len(doc["warnings"]):
        print("FAIL: %s: %d warning codes for %d warnings" %
              (path, len(doc["warning_codes"]), len(doc["warnings"])), file=sys.stderr)
        bad += 1
    if not errs:
        print("ok: %s" % os.path.basename(path))
# what the runs must have covered
by = {os.path.basename(p)[:-5]: json.load(open(p)) for p in written}
checks = {
    "errors[] from defects": bool(by["defects"]["errors"]),
    "a partial run": by["interrupted"]["run"]["complete"] is False,
    "a write curve": by["write"]["bandwidth"].get("mode") == "write",
    "seek skipped on a small device": "seek-skipped" in by["small"]["warning_codes"],
    "a flat seek without a fit": "fit" not in by["file_seek"]["seek"],
    "a 4Kn device": by["probe4k"]["device"]["sector_format"] == "4Kn",
}
for what, ok in checks.items():
    print(("ok: covers " if ok else "FAIL: does not cover ") + what, file=sys.stdout if ok else sys.stderr)
    bad += not ok
# negative controls: contract breaks the schema must refuse
base = by["profile_wd-red-4tb"]
def broken(f):
    d = json.loads(json.dumps(base))
    f(d)
    return d
controls = {
    "a wrong schema name": broken(lambda d: d.update(schema="diskgeo.profile/2")),
    "a rate as a string": broken(lambda d: d["bandwidth"]["zones"][0].update(mb_per_s="181")),
    "a negative offset": broken(lambda d: d["bandwidth"]["samples"][0].update(offset_bytes=-1)),
    "no device": broken(lambda d: d.pop("device")),
    "an unknown warning code": broken(lambda d: d.update(warnings=["x"], warning_codes=["made-up"])),
    "a sector format not in the contract": broken(lambda d: d["device"].update(sector_format="4Ke")),
}
for what, doc in controls.items():
    if v.is_valid(doc):
        print("FAIL: the schema accepts %s" % what, file=sys.stderr)
        bad += 1
    else:
        print("ok: refuses %s" % what)
sys.exit(1 if bad else 0)
PYEOF
echo "test_schema: $fails failure(s)"
[ "$fails" = 0 ]
