#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The command line for people (issue 14): output streams and the flags every command shares
# (-J, -q, -v, --json - with --csv -), units that mean one thing (util-linux sizes, times in h,
# messages naming the accepted forms, decimal places and binary distances in the summaries),
# a device too small for seek, a flat device, a longer seek budget buying samples, warning
# codes, and the progress line on a terminal.
#
#   test_cli_flags.sh DISKGEO [DISKGEO_SIMDISK]
#
# Also the small things: simdisk's per-command help and `detach loopN` (attach and detach as
# root with /dev/fuse), probe's sector format and rotation class, 1-based zones in `model`,
# read's real block size and its silence about a bandwidth curve on a flat loop device (root).
#
# Each check names what it proves; exit 0 when all hold, 1 otherwise.
set -u
DISKGEO=${1:?usage: test_cli_flags.sh DISKGEO [DISKGEO_SIMDISK]}
SIMDISK=${2:-}
PY=/usr/bin/python3
fails=0
checks=0

T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

check() {
	local what=$1
	shift
	checks=$((checks + 1))
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what" >&2
		fails=$((fails + 1))
	fi
}

# run NAME ARGS...: runs diskgeo, stdout/stderr into $T/NAME.out/.err, status into $T/NAME.rc
run() {
	local name=$1
	shift
	"$DISKGEO" "$@" >"$T/$name.out" 2>"$T/$name.err"
	echo $? >"$T/$name.rc"
}
rc_is() { [ "$(cat "$T/$1.rc")" = "$2" ]; }
one_line_with() { [ "$(wc -l <"$T/$1.err")" = 1 ] && grep -q -- "$2" "$T/$1.err"; }
# json FILE EXPR: a Python expression over the document `d` is true
json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

# ---- streams and flags ----
for cmd in bandwidth seek; do
	run both_$cmd $cmd sim:wd-red-4tb --json - --csv -
	check "$cmd --json - --csv -: exit 1" rc_is both_$cmd 1
	check "$cmd --json - --csv -: one line saying why" \
		one_line_with both_$cmd "would both write to standard output"
	check "$cmd --json - --csv -: nothing on stdout" test ! -s "$T/both_$cmd.out"
done

run J profile sim:wd-red-4tb -J -n 16 --no-seek
check "-J: exit 0" rc_is J 0
check "-J: the profile on stdout" json "$T/J.out" 'd["schema"] == "diskgeo.profile/1" and "bandwidth" in d'
check "-J: the summary moves to stderr" grep -q "^outer .* MB/s" "$T/J.err"

run file bandwidth sim:wd-red-4tb -n 16 --json "$T/bw.json"
check "--json FILE: the summary on stdout" grep -q "^outer .* MB/s" "$T/file.out"
run csv bandwidth sim:wd-red-4tb -n 16 --csv -
check "--csv -: CSV on stdout, summary on stderr" \
	bash -c "head -n 1 '$T/csv.out' | grep -q '^offset_bytes,' && grep -q '^outer' '$T/csv.err'"

run quiet profile sim:wd-red-4tb -q -n 16 --json "$T/q.json"
check "-q: exit 0" rc_is quiet 0
check "-q: nothing on stdout" test ! -s "$T/quiet.out"
check "-q: only warnings on stderr" bash -c "! grep -v '^diskgeo: warning: ' '$T/quiet.err'"
check "-q: the profile still written" json "$T/q.json" '"seek" in d and "bandwidth" in d'
run quiet_probe probe sim:wd-red-4tb --quiet
check "probe --quiet: no table" test ! -s "$T/quiet_probe.out"

run verbose profile sim:wd-red-4tb -v -n 16 --json "$T/v.json"
check "-v: each phase's start on stderr" \
	bash -c "grep -q '^diskgeo: bandwidth: started' '$T/verbose.err' &&
		 grep -q '^diskgeo: rotation: started' '$T/verbose.err' &&
		 grep -q '^diskgeo: seek: started' '$T/verbose.err'"
check "-v: each measurement's device time on stderr" \
	grep -q '^diskgeo: seek: done, [0-9.]* s of device time' "$T/verbose.err"
check "-v: the summary stays on stdout" grep -q "^rotation: 5400.0 rpm" "$T/verbose.out"

run qd bandwidth sim:wd-red-4tb -n 16 -Q 2 --json "$T/qd.json"
check "-Q is --qd" json "$T/qd.json" 'd["run"]["parameters"]["qd"] == 2'

# ---- units ----
# (a 512n drive: 10^11 is not a whole number of a 512e drive's 4096-byte physical sectors)
run dec bandwidth sim:cheetah-15k -n 16 -r 0:100GB --json "$T/dec.json"
check "-r 0:100GB ends at 10^11 bytes" json "$T/dec.json" \
	'd["run"]["parameters"]["range_end_bytes"] == 100000000000'
check "... and the zone table says 100.00 GB (33.3%)" grep -q "100.00 GB (33.3%)" "$T/dec.out"
run bin bandwidth sim:wd-red-4tb -n 16 -r 0:100G --json "$T/bin.json"
check "-r 0:100G ends at 100 x 2^30 bytes" json "$T/bin.json" \
	'd["run"]["parameters"]["range_end_bytes"] == 107374182400'
run hour bandwidth sim:wd-red-4tb -n 16 --time-budget 0.01h --json "$T/h.json"
check "--time-budget 0.01h is 36 s" json "$T/h.json" \
	'abs(d["run"]["parameters"]["time_budget_s"] - 36) < 1e-9'
run badtime seek sim:wd-red-4tb --time-budget 90x
check "--time-budget 90x: exit 1" rc_is badtime 1
check "... naming the accepted forms" one_line_with badtime "'90x' is not a time above 0: use ms, s, m or h"
run badsize read sim:wd-red-4tb --length 4x
check "--length 4x: exit 1" rc_is badsize 1
check "... naming the accepted forms" one_line_with badsize \
	"'4x' is not a size.*K M G T (KiB MiB GiB TiB: powers of 1024), KB MB GB TB (powers of 1000)"
run seekunits seek sim:wd-red-4tb --no-spans
check "seek summary: distances in binary units" grep -qE "^ *[0-9.]+ (KiB|MiB|GiB)  " "$T/seekunits.out"
check "seek summary: says how many of its rows it shows" \
	grep -q "^9 of 24 distances" "$T/seekunits.out"

# ---- a longer seek budget buys samples ----
run b1 seek sim:wd-red-4tb --no-spans --json "$T/b1.json"
run b2 seek sim:wd-red-4tb --no-spans --time-budget 2m --json "$T/b2.json"
# the first pass takes 40% of the curve's budget where every distance then holds 12 samples or
# more (the rest goes to extra samples where the moves spread most): 14 per distance inside 60 s
# on this 4 TB 5400 rpm drive with 24 distances; 2m more than doubles it; every distance kept
# in both
check "seek default: 12-16 samples per distance in the first pass" json "$T/b1.json" \
	'12 <= d["seek"]["samples_per_distance"] <= 16 and len(d["seek"]["points"]) == 24'
check "seek --time-budget 2m: two to three times the samples per distance" json "$T/b2.json" \
	'28 <= d["seek"]["samples_per_distance"] <= 42 and len(d["seek"]["points"]) == 24'

# ---- a device too small for seek, a flat device ----
dd if=/dev/urandom of="$T/small.img" bs=1M count=32 status=none
run small profile "$T/small.img" -n 8 --bandwidth-budget 1s --json "$T/small.json"
check "profile of a 32 MiB file: exit 0" rc_is small 0
check "... the curve measured, seek skipped" json "$T/small.json" \
	'"bandwidth" in d and "seek" not in d and "iops" not in d'
check "... with the seek-skipped warning code" json "$T/small.json" \
	'"seek-skipped" in d["warning_codes"] and len(d["warning_codes"]) == len(d["warnings"])'
check "... and the warning on stderr" grep -q "seek phase needs: seek, rotation and spans were skipped" "$T/small.err"

dd if=/dev/urandom of="$T/flat.img" bs=1M count=80 status=none
cat "$T/flat.img" >/dev/null # in the page cache: flat access times
run flat seek "$T/flat.img" --time-budget 3s --no-spans --json "$T/flat.json"
check "seek of a flat device: exit 0" rc_is flat 0
check "... prints the flat access time and why" \
	grep -q "^access time: flat, [0-9.]* ms on average at every distance.*no rotation, so no seek curve" "$T/flat.out"
check "... prints no track-to-track/average/full-stroke line" bash -c "! grep -q 'track-to-track' '$T/flat.out'"
check "... writes no fit and no seek figures" json "$T/flat.json" \
	'"fit" not in d["seek"] and "track_to_track_ms" not in d["seek"] and "full_stroke_ms" not in d["seek"] and "average_ms" not in d["seek"] and len(d["seek"]["points"]) > 0'
check "... warning codes beside warnings" json "$T/flat.json" 'd["warning_codes"][0] == "device-file"'

# ---- read ----
run rspan read sim:wd-red-4tb --random --span 1GB -l 64k
check "read --random --span prints the span" grep -q "span 1000000000 bytes = 1.00 GB" "$T/rspan.out"

check "read -l 8s on a 4Kn drive: the real block size" bash -c \
	"'$DISKGEO' read sim:seagate-st4000vn006 -l 8s | head -n 1 | grep -q '32768-byte (32 KiB) blocks'"

# ---- probe, model ----
run probe4k probe sim:seagate-st4000vn006 --json "$T/probe4k.json"
run probe4kt probe sim:seagate-st4000vn006
check "probe: 4Kn sector format in the table" grep -q "^sector format *4Kn$" "$T/probe4kt.out"
check "probe: the rotation class in the table" \
	grep -q "^rotation rate *5400 rpm (5400 rpm class; the drive spec says)$" "$T/probe4kt.out"
check "probe: sector_format and nominal_rpm in the JSON" json "$T/probe4k.json" \
	'd["device"]["sector_format"] == "4Kn" and d["device"]["nominal_rpm"] == 5400'
run probe512 probe sim:cheetah-15k -J
check "probe: 512n" json "$T/probe512.out" 'd["device"]["sector_format"] == "512n"'
run probe512e probe sim:wd-red-4tb -J
check "probe: 512e" json "$T/probe512e.out" 'd["device"]["sector_format"] == "512e"'
run model model wd-red-4tb
check "model: zones numbered from 1, as bandwidth and the plots" \
	bash -c "grep -A2 '^zones (20' '$T/model.out' | tail -n 1 | grep -q '^ *1  *0  '"
check "model --help points at docs/drive-spec.md" bash -c "'$DISKGEO' model --help | grep -q 'docs/drive-spec.md'"

# ---- diskgeo-simdisk: help per command, detach by kernel name ----
if [ -n "$SIMDISK" ]; then
	for sub in attach detach list; do
		"$SIMDISK" $sub --help >"$T/sd.out" 2>"$T/sd.err"
		echo $? >"$T/sd.rc"
		check "simdisk $sub --help: exit 0" rc_is sd 0
		check "... its usage on stdout, nothing on stderr" \
			bash -c "grep -q '^Usage: diskgeo-simdisk $sub' '$T/sd.out' && [ ! -s '$T/sd.err' ]"
	done
	if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ]; then
		export DISKGEO_SIMDISK_RUNDIR="$T/run"
		dev=$("$SIMDISK" attach wd-red-4tb 2>"$T/attach.err")
		if [ -b "$dev" ]; then
			"$SIMDISK" detach "${dev#/dev/}" >"$T/detach.out" 2>"$T/detach.err"
			rc=$?
			check "simdisk detach ${dev#/dev/}: exit 0" [ "$rc" = 0 ]
			check "... the instance is gone" bash -c "! '$SIMDISK' list | grep -q '^$dev\s'"
			[ "$rc" = 0 ] || "$SIMDISK" detach "$dev"
		else
			echo "skip: simdisk attach failed: $(cat "$T/attach.err")"
		fi
		unset DISKGEO_SIMDISK_RUNDIR
	fi
fi

# ---- read on a flat device: no word about a bandwidth curve (root: a loop device) ----
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null; then
	truncate -s 64M "$T/loop.img"
	loop=$(losetup --find --show "$T/loop.img" 2>/dev/null)
	if [ -n "$loop" ]; then
		echo 0 >"/sys/block/${loop#/dev/}/queue/rotational" 2>/dev/null
		if [ "$(cat "/sys/block/${loop#/dev/}/queue/rotational")" = 0 ]; then
			run rflat read "$loop" -l 1M
			run pflat probe "$loop"
			check "probe of a flat loop device warns about the curve" \
				grep -q "non-rotational device" "$T/pflat.err"
			check "read of it does not" bash -c "! grep -q 'bandwidth curve' '$T/rflat.err'"
			check "... and reads" rc_is rflat 0
		fi
		losetup -d "$loop"
	fi
fi

# ---- the progress line (a terminal through script(1)) ----
if command -v script >/dev/null; then
	script -qec "'$DISKGEO' profile sim:wd-red-4tb --json '$T/p.json'" /dev/null >"$T/tty.out"
	check "progress: each redraw clears to the end of the line" \
		"$PY" -c '
import re, sys
t = open(sys.argv[1], "rb").read().decode()
draws = re.findall(r"\r([^\r\n]*)", t)
lines = [d for d in draws if "of the run" in d]
assert lines, "no progress line"
assert all(d.startswith("\x1b[K") for d in lines), lines
assert any(l.startswith("\x1b[Kbandwidth:") for l in lines) and any("seek:" in l or "rotation:" in l for l in lines)
pc = [int(m) for m in re.findall(r"(\d+)% of the run", t)]
assert pc == sorted(pc), pc  # one line for the run: the percent never steps back
' "$T/tty.out"
fi

# ---- every profile written above validates against docs/profile.schema.json ----
SCHEMA=$(dirname "$0")/../docs/profile.schema.json
if "$PY" -c 'import jsonschema' 2>/dev/null && [ -r "$SCHEMA" ]; then
	check "every profile written here validates against the schema" "$PY" -c '
import glob, json, sys, jsonschema
s = json.load(open(sys.argv[1]))
v = jsonschema.validators.validator_for(s)(s)
n = 0
for p in glob.glob(sys.argv[2] + "/*.json") + glob.glob(sys.argv[2] + "/*.out"):
    try:
        d = json.load(open(p))
    except ValueError:
        continue  # a summary, not a profile
    if not isinstance(d, dict) or d.get("schema") != "diskgeo.profile/1":
        continue
    for e in v.iter_errors(d):
        sys.exit("%s: %s" % (p, e.message))
    n += 1
assert n >= 15, n
' "$SCHEMA" "$T"
fi

echo "$checks checks, $fails failures"
[ "$fails" = 0 ]
