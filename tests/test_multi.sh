#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Several devices at once (`CMD DEV... --json-dir DIR`, one process per device):
# - 8 sim: drives (the four presets and four renamed copies) in one `profile` run give profiles
#   identical to 8 single runs (after dropping run.started_at, run.elapsed_s), exit 0, one line
#   per device; `bandwidth` and `seek` likewise for two drives;
# - a device that cannot be opened and one whose reads fail (an error defect) do not stop the
#   others: every good device's profile is written, the failing ones report their own status
#   (2 and 3) on their line, and the overall exit status is the worst (2);
# - --json-dir with --json (or --csv, --prometheus) and two devices of the same name are refused
#   with one line and exit 1, before anything runs.
#
# Usage: tests/test_multi.sh DISKGEO_BINARY SOURCE_DIR
set -u
dg=$(readlink -f "${1:?usage: test_multi.sh DISKGEO SOURCE_DIR}")
src=$(readlink -f "${2:?usage: test_multi.sh DISKGEO SOURCE_DIR}")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d /tmp/diskgeo-multi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

devs=()
for p in cheetah-15k hgst-7k1000 seagate-st4000vn006 wd-red-4tb; do
	"$py" -c 'import json, sys; s = json.load(open(sys.argv[1])); s["name"] = sys.argv[2]; json.dump(s, open(sys.argv[3], "w"))' \
		"$src/presets/$p.json" "copy-$p" "$tmp/copy-$p.json"
	devs+=("sim:$p" "sim:$tmp/copy-$p.json")
done
"$py" - "$src/presets/cheetah-15k.json" "$tmp/failing.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["name"] = "failing"
s["defects"] = [{"lba": 1000000, "count": 8000000, "kind": "error", "extra_ms": 100}]
json.dump(s, open(sys.argv[2], "w"))
PY

same() { # same A.json B.json: identical but for the clock
	"$py" - "$1" "$2" <<'PY'
import json, sys
def load(p):
    d = json.load(open(p))
    for k in ("started_at", "elapsed_s"):
        d["run"].pop(k, None)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    diff = [k for k in set(a) | set(b) if a.get(k) != b.get(k)]
    sys.exit("%s and %s differ in %s" % (sys.argv[1], sys.argv[2], diff))
PY
}

start=$(date +%s.%N)
"$dg" profile "${devs[@]}" --json-dir "$tmp/multi" >"$tmp/multi.out" 2>"$tmp/multi.err"
rc=$?
t_multi=$("$py" -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)" ||
	echo "?")
[ "$rc" = 0 ] || fail "8 devices: exit $rc: $(cat "$tmp/multi.err")"
[ "$(wc -l <"$tmp/multi.out")" = 8 ] || fail "8 devices: not one line each: $(cat "$tmp/multi.out")"
start=$(date +%s.%N)
mkdir "$tmp/single"
for d in "${devs[@]}"; do
	n=${d#sim:}
	n=${n##*/}
	n=${n%.json}
	"$dg" profile "$d" --json "$tmp/single/$n.json" >/dev/null 2>&1 || fail "single $d"
done
t_single=$("$py" -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
for f in "$tmp"/single/*.json; do
	same "$f" "$tmp/multi/${f##*/}" || fail "profile ${f##*/}"
done
dev_s=$("$py" -c 'import json, glob, sys; print("%.0f" % sum(json.load(open(f))["run"]["device_time_s"] for f in glob.glob(sys.argv[1] + "/*.json")))' "$tmp/multi")
echo "8 sim: drives: one parallel run ${t_multi} s wall, 8 single runs ${t_single} s wall; ${dev_s} s of device time in all"

for cmd in bandwidth seek; do
	"$dg" $cmd sim:hgst-7k1000 sim:cheetah-15k --json-dir "$tmp/$cmd" >/dev/null 2>&1 || fail "$cmd --json-dir"
	for n in hgst-7k1000 cheetah-15k; do
		"$dg" $cmd "sim:$n" --json "$tmp/$cmd-$n.json" >/dev/null 2>&1
		same "$tmp/$cmd-$n.json" "$tmp/$cmd/$n.json" || fail "$cmd $n"
	done
done

# Failing devices do not stop the others; the exit status is the worst.
"$dg" profile sim:hgst-7k1000 /dev/diskgeo-no-such-disk "sim:$tmp/failing.json" sim:cheetah-15k \
	--json-dir "$tmp/mixed" >"$tmp/mixed.out" 2>"$tmp/mixed.err"
rc=$?
[ "$rc" = 2 ] || fail "mixed: exit $rc, expected 2 (the worst: device)"
for n in hgst-7k1000 cheetah-15k; do
	same "$tmp/single/$n.json" "$tmp/mixed/$n.json" || fail "mixed: $n"
done
grep -q "^/dev/diskgeo-no-such-disk: exit 2: diskgeo: /dev/diskgeo-no-such-disk: No such file or directory$" "$tmp/mixed.out" ||
	fail "mixed: the missing device's line: $(cat "$tmp/mixed.out")"
grep -q "^sim:$tmp/failing.json: exit 3: " "$tmp/mixed.out" || fail "mixed: the failing drive's line: $(cat "$tmp/mixed.out")"
"$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["errors"] and d["errors"][0]["errno"] == 5, d["errors"]' \
	"$tmp/mixed/failing.json" || fail "mixed: the failing drive's profile lists no EIO"
[ ! -e "$tmp/mixed/diskgeo-no-such-disk.json" ] || fail "mixed: a profile for the missing device"

# Refusals: one line, exit 1, nothing run.
refuse() { # refuse "MESSAGE" ARGS...
	local want=$1
	shift
	"$dg" "$@" >"$tmp/r.out" 2>"$tmp/r.err"
	local rc=$?
	[ "$rc" = 1 ] && [ "$(wc -l <"$tmp/r.err")" = 1 ] && grep -qF "$want" "$tmp/r.err" ||
		fail "refuse $*: exit $rc: $(cat "$tmp/r.err")"
	[ ! -s "$tmp/r.out" ] || fail "refuse $*: printed $(cat "$tmp/r.out")"
}
refuse "profile: --json names one output or one device" profile sim:hgst-7k1000 --json-dir "$tmp/r1" --json x.json
refuse "seek: --csv names one output" seek sim:hgst-7k1000 --json-dir "$tmp/r1" --csv x.csv
refuse "bandwidth: --prometheus names one output" bandwidth sim:hgst-7k1000 --json-dir "$tmp/r1" --prometheus x.prom
refuse "would both write $tmp/r2/hgst-7k1000.json" profile sim:hgst-7k1000 sim:hgst-7k1000 --json-dir "$tmp/r2"
refuse "profile: DEVICE is missing" profile --json-dir "$tmp/r3"
refuse "profile: option '--json-dir' needs an argument" profile sim:hgst-7k1000 --json-dir
refuse "profile: unknown option '--bogus'" profile sim:hgst-7k1000 --json-dir "$tmp/r4" --bogus
[ ! -e "$tmp/r2/hgst-7k1000.json" ] || fail "a refused run wrote a profile"

[ "$fails" = 0 ] && echo "test_multi: all passed"
[ "$fails" = 0 ]
