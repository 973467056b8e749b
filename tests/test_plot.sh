#!/bin/sh
# SPDX-License-Identifier: MIT
# diskgeo-plot end to end: pictures from a profile, a comparison, partial profiles, CSV input,
# the gnuplot fallback, and every kind of bad input (exit 1, one line, nothing half-written).
# Usage: test_plot.sh PYTHON TOOL PROFILE.json [DISKGEO]
# PROFILE.json's directory also holds sample-profile-7k1000.json (the second drive of the
# comparison). With DISKGEO (the built binary), a profile it measures of sim:wd-red-4tb is
# plotted too. Exit 77 (skipped) when PYTHON cannot import matplotlib.
set -u

PY=${1:?usage: test_plot.sh PYTHON TOOL PROFILE.json [DISKGEO]}
TOOL=${2:?}
FIX=${3:?}
DISKGEO=${4:-}
FIX2=$(dirname "$FIX")/sample-profile-7k1000.json

if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
	echo "test_plot: $PY cannot import matplotlib; skipped"
	exit 77
fi

T=$(mktemp -d /tmp/test_plot.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
# check DESC COMMAND...: the command must succeed
check() {
	d=$1
	shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}

# run OUT ARGS...: runs the tool, stdout to $T/OUT.out, stderr to $T/OUT.err; sets rc
run() {
	o=$1
	shift
	"$PY" "$TOOL" "$@" >"$T/$o.out" 2>"$T/$o.err"
	rc=$?
}

# PNG: signature, and an IHDR of the expected size (10 x 5.6 in at the asked dpi)
png_ok() { # FILE MINBYTES WIDTH
	[ -f "$1" ] && [ "$(stat -c %s "$1")" -ge "$2" ] || return 1
	"$PY" - "$1" "$3" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read(32)
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
want = int(sys.argv[2])
assert abs(w - want) <= 2 and abs(h - want * 0.56) <= 2, (w, h)
EOF
}
svg_ok() { # FILE MINBYTES
	[ -f "$1" ] && [ "$(stat -c %s "$1")" -ge "$2" ] && grep -q '<svg' "$1" && grep -q '</svg>' "$1"
}
# svg_has FILE TEXT: the text is in the picture (matplotlib keeps each text as a comment)
svg_has() { tr '\n' ' ' <"$1" | grep -qF -- "$2"; }
no_temps() { [ -z "$(find "$1" -name '.*.tmp' 2>/dev/null)" ]; }

# ---- one profile: six files, listed on stdout, with the drive and its figures in them
run one "$FIX" -o "$T/one"
check "single profile exits 0 (rc=$rc)" [ "$rc" -eq 0 ]
for k in bandwidth seek iops; do
	check "$k.png is a 1200x672 PNG of real size" png_ok "$T/one/$k.png" 20000 1200
	check "$k.svg is a non-trivial SVG" svg_ok "$T/one/$k.svg" 20000
	check "$k.png and $k.svg are listed on stdout" \
		grep -qx "$T/one/$k.png" "$T/one.out"
	grep -qx "$T/one/$k.svg" "$T/one.out" || fail "$k.svg not listed"
	check "$k title names model, serial, capacity, rpm" \
		svg_has "$T/one/$k.svg" "WDC WD40EFRX-68N32N0 · s/n WD-WCC7K3PL8XT2 · 4.00 TB · 5399 rpm"
done
check "stdout lists exactly the 6 files" [ "$(wc -l <"$T/one.out")" -eq 6 ]
check "nothing on stderr for a complete profile" [ ! -s "$T/one.err" ]
check "no temporary files left" no_temps "$T/one"
for m in "outer 180.9 MB/s" "inner 80.9 MB/s" "ratio 2.24"; do
	check "bandwidth: '$m' from the profile" svg_has "$T/one/bandwidth.svg" "$m"
done
check "bandwidth: 20 zones and 200 samples" svg_has "$T/one/bandwidth.svg" "recording zones (20)"
svg_has "$T/one/bandwidth.svg" "samples (200)" || fail "samples (200) missing"
check "bandwidth: % of capacity axis" svg_has "$T/one/bandwidth.svg" "% of capacity"
for m in "track-to-track 1.01 ms" "average 11.80 ms" "full stroke 24.00 ms" "measured (31 distances)"; do
	check "seek: '$m' marked" svg_has "$T/one/seek.svg" "$m"
done
check "seek: no fit in the profile -> smooth line" svg_has "$T/one/seek.svg" "smooth line through the points"
check "iops: inner 10% span told apart" svg_has "$T/one/iops.svg" "span at the inner 10%"
check "iops: outer spans" svg_has "$T/one/iops.svg" "spans from the outer edge (LBA 0)"
check "iops: 4 KiB blocks in the axis label" svg_has "$T/one/iops.svg" "IOPS (4 KiB random reads, QD1)"
check "files are readable by others (0644 under umask 022)" \
	[ "$(umask 022 && stat -c %a "$T/one/seek.png")" = 644 ]

# ---- a comparison of two drives (the second has a seek fit and no iops section)
run cmp "$FIX" "$FIX2" -o "$T/cmp" --format png,svg --title "NAS candidates"
check "comparison exits 0 (rc=$rc)" [ "$rc" -eq 0 ]
for k in bandwidth seek iops; do
	check "comparison $k.png" png_ok "$T/cmp/$k.png" 20000 1200
	check "comparison $k.svg" svg_ok "$T/cmp/$k.svg" 20000
done
check "comparison: --title leads the title" svg_has "$T/cmp/seek.svg" "NAS candidates — Seek time"
check "comparison: legend names drive 1" svg_has "$T/cmp/bandwidth.svg" "1: WDC WD40EFRX-68N32N0"
check "comparison: legend names drive 2" svg_has "$T/cmp/bandwidth.svg" "2: HGST HTS721010A9E630 · s/n JR1000D33VPSBE · 1.00 TB · 7199 rpm"
check "comparison: drive 2 drawn with its fit" svg_has "$T/cmp/seek.svg" "7199 rpm (fitted curve)"
check "comparison: the missing iops section is said" svg_has "$T/cmp/iops.svg" "no iops data"
check "comparison: ... and reported on stderr" grep -q "sample-profile-7k1000.json: no iops data" "$T/cmp.err"
check "comparison: capacities differ -> no % axis" sh -c "! tr '\n' ' ' <'$T/cmp/bandwidth.svg' | grep -qF '% of capacity'"

# ---- partial profiles: plot what is there, say what is not
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); [d.pop(k) for k in ("seek","iops")]; json.dump(d,open(sys.argv[2],"w"))' \
	"$FIX" "$T/bw-only.json"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); [d.pop(k) for k in ("bandwidth","iops")]; json.dump(d,open(sys.argv[2],"w"))' \
	"$FIX" "$T/seek-only.json"
run bw "$T/bw-only.json" -o "$T/bw" --format png
check "bandwidth-only profile exits 0" [ "$rc" -eq 0 ]
check "bandwidth-only: bandwidth.png only" [ "$(ls "$T/bw")" = bandwidth.png ]
check "bandwidth-only: says seek and iops are missing" grep -q "no seek or iops data" "$T/bw.err"
run sk "$T/seek-only.json" -o "$T/sk" --format svg
check "seek-only profile exits 0 with seek.svg only" [ "$rc" -eq 0 -a "$(ls "$T/sk")" = seek.svg ]

# ---- warnings, an interrupted run and samples left out of the zone rates show in the figures
"$PY" - "$FIX" "$T/warn.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["warnings"] = ["USB transport: a bridge may cap the outer rate"]
d["run"]["complete"] = False
for i in (10, 50, 90):
    d["bandwidth"]["samples"][i]["excluded"] = True
for i in (20, 70):
    d["bandwidth"]["samples"][i]["stalls"] = 1
    d["bandwidth"]["samples"][i]["stall_ms"] = 33.3
json.dump(d, open(sys.argv[2], "w"))
EOF
run warn "$T/warn.json" -o "$T/warn" --format svg
check "warned profile exits 0" [ "$rc" -eq 0 ]
check "warning under the bandwidth figure" svg_has "$T/warn/bandwidth.svg" "USB transport: a bridge may cap the outer rate"
check "warning under the iops figure" svg_has "$T/warn/iops.svg" "USB transport"
check "partial run in the title" svg_has "$T/warn/seek.svg" "5399 rpm · partial run"
check "partial run said on stderr" grep -q "partial profile" "$T/warn.err"
check "excluded samples drawn apart" svg_has "$T/warn/bandwidth.svg" "left out of the zone rates (3)"
check "... from the 197 used" svg_has "$T/warn/bandwidth.svg" "samples (197)"
check "samples with a slow spot marked" svg_has "$T/warn/bandwidth.svg" "slow spot inside (2; stall_ms in the profile)"
run warncmp "$T/warn.json" "$FIX2" -o "$T/warncmp" --format svg
check "comparison: slow-spot markers explained in the legend" \
	svg_has "$T/warncmp/bandwidth.svg" "slow spot inside (stall_ms in the profile)"
check "comparison: left-out markers explained in the legend" \
	svg_has "$T/warncmp/bandwidth.svg" "left out of the zone rates"

# ---- units: the iops plot in % of capacity (ticks on the spans) with GB/TB on top; seek
# distances in binary units
check "iops: x in % of capacity" svg_has "$T/one/iops.svg" "span (% of capacity, log scale)"
check "iops: the whole disk at its 100% tick" svg_has "$T/one/iops.svg" "100%"
check "iops: a GB/TB axis on top" svg_has "$T/one/iops.svg" "4.00 TB"
check "iops: no TiB ticks" sh -c "! tr '\n' ' ' <'$T/one/iops.svg' | grep -qF 'TiB'"
check "seek: distances said to be powers of 1024" svg_has "$T/one/seek.svg" "KiB/MiB/GiB/TiB, powers of 1024"

# ---- seek fits in other units: cylinders are drawn when the profile says how many bytes a
# cylinder holds; a fit whose unit cannot be mapped gives way to a smooth line, with a note
"$PY" - "$FIX2" "$T" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["seek"]["fit"]  # diskgeo's: u = distance / capacity
cap = d["device"]["size_bytes"]
bpc = cap / 63800.0  # restate it per cylinder
cyl = {"a": f["a_ms"], "b": f["b_ms"] * (bpc / cap) ** 0.5, "c": f["c_ms"],
       "e": f["e_ms"] * bpc / cap, "boundary_cylinders": f["boundary_fraction"] * cap / bpc}
d["seek"]["fit"] = dict(cyl, bytes_per_cylinder=bpc)
json.dump(d, open(sys.argv[2] + "/fit-cyl.json", "w"))
d["seek"]["fit"] = cyl
json.dump(d, open(sys.argv[2] + "/fit-nounit.json", "w"))
d["seek"]["fit"] = f
del d["device"]["size_bytes"]
json.dump(d, open(sys.argv[2] + "/fit-nosize.json", "w"))
EOF
run fc "$T/fit-cyl.json" -o "$T/fc" --format svg
check "fit in cylinders with bytes_per_cylinder is drawn" svg_has "$T/fc/seek.svg" "fit: a + b√d, then c + e·d"
run fn "$T/fit-nounit.json" -o "$T/fn" --format svg
check "fit in cylinders alone: a smooth line instead" svg_has "$T/fn/seek.svg" "smooth line through the points"
check "... and a note on stderr" grep -q "cannot be mapped to bytes" "$T/fn.err"
run fs "$T/fit-nosize.json" -o "$T/fs" --format svg
check "fit over capacity fractions without a capacity: a smooth line" \
	svg_has "$T/fs/seek.svg" "smooth line through the points"

# ---- a profile on standard input
"$PY" "$TOOL" - -o "$T/stdin" --format png <"$FIX" >"$T/stdin.out" 2>"$T/stdin.err"
check "'-' reads the profile from stdin" png_ok "$T/stdin/bandwidth.png" 20000 1200

# ---- CSV input: a --csv-dir style directory (header row = JSON keys)
mkdir -p "$T/csv"
"$PY" - "$FIX" "$T/csv" <<'EOF'
import csv, json, os, sys
d = json.load(open(sys.argv[1]))
for name, rows in (("bandwidth.csv", d["bandwidth"]["samples"]),
                   ("zones.csv", d["bandwidth"]["zones"]),
                   ("seek.csv", d["seek"]["points"]), ("iops.csv", d["iops"]["spans"])):
    with open(os.path.join(sys.argv[2], name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
EOF
run csv "$T/csv" -o "$T/csvout"
check "CSV directory exits 0 with 6 files" [ "$rc" -eq 0 -a "$(wc -l <"$T/csv.out")" -eq 6 ]
check "CSV: same 20 zones" svg_has "$T/csvout/bandwidth.svg" "recording zones (20)"
run csv1 "$T/csv/seek.csv" -o "$T/csv1" --format png
check "a single seek CSV gives seek.png" [ "$rc" -eq 0 -a "$(ls "$T/csv1")" = seek.png ]

# ---- the gnuplot back end, when gnuplot is there
if command -v gnuplot >/dev/null 2>&1; then
	run gp "$FIX" "$FIX2" -o "$T/gp" --backend gnuplot
	check "gnuplot back end exits 0" [ "$rc" -eq 0 ]
	for k in bandwidth seek iops; do
		check "gnuplot $k.png" png_ok "$T/gp/$k.png" 10000 1200
		check "gnuplot $k.svg" svg_ok "$T/gp/$k.svg" 10000
	done
else
	echo "skip gnuplot back end: gnuplot not installed"
fi

# ---- what diskgeo itself writes: `profile` when it has it, else `bandwidth`
if [ -n "$DISKGEO" ] && [ -x "$DISKGEO" ]; then
	if "$DISKGEO" profile sim:wd-red-4tb --json "$T/sim.json" >/dev/null 2>"$T/sim.err"; then
		what="profile"
	elif "$DISKGEO" bandwidth sim:wd-red-4tb --json "$T/sim.json" >/dev/null 2>"$T/sim.err"; then
		what="bandwidth"
	else
		what=""
		fail "diskgeo could not measure sim:wd-red-4tb: $(cat "$T/sim.err")"
	fi
	if [ -n "$what" ]; then
		run sim "$T/sim.json" -o "$T/sim" --format png,svg
		check "diskgeo $what sim:wd-red-4tb plots (rc=$rc)" [ "$rc" -eq 0 ]
		check "... bandwidth.png" png_ok "$T/sim/bandwidth.png" 20000 1200
		check "... its title names the drive and its capacity" \
			svg_has "$T/sim/bandwidth.svg" "wd-red-4tb · 4.00 TB"
		if [ "$what" = profile ]; then
			check "... seek.png" png_ok "$T/sim/seek.png" 20000 1200
			check "... rpm in the title" svg_has "$T/sim/seek.svg" "rpm"
		fi
	fi
fi

# ---- bad input: exit 1, one line on stderr naming the problem, nothing written
printf 'this is not json\n' >"$T/notjson.json"
printf '{"schema": "diskgeo.model/1", "bandwidth": {}}\n' >"$T/schema.json"
printf '{"schema": "diskgeo.profile/1", "device": {"path": "/dev/sdb"}, "warnings": []}\n' >"$T/empty.json"
printf '{"schema": "diskgeo.profile/1", "seek": {"points": [{"distance_bytes": 4096}]}}\n' >"$T/field.json"
printf 'a,b\n1,2\n' >"$T/bad.csv"
: >"$T/afile"
bad() { # DESC EXPECTED-TEXT ARGS...
	d=$1
	e=$2
	shift 2
	run bad "$@"
	if [ "$rc" -eq 1 ] && [ "$(wc -l <"$T/bad.err")" -eq 1 ] && grep -q "^diskgeo-plot: .*$e" "$T/bad.err" &&
		[ ! -s "$T/bad.out" ]; then
		pass "bad input: $d"
	else
		fail "bad input: $d (rc=$rc, stderr: $(cat "$T/bad.err"))"
	fi
}
bad "missing file" "No such file" "$T/nope.json" -o "$T/b1"
bad "not JSON" "not JSON" "$T/notjson.json" -o "$T/b1"
bad "wrong schema" 'expected "diskgeo.profile/1"' "$T/schema.json" -o "$T/b1"
bad "no plottable section" "nothing to plot" "$T/empty.json" -o "$T/b1"
bad "a point without seek_ms" "seek.points\[0\]: missing seek_ms" "$T/field.json" -o "$T/b1"
bad "unknown CSV" "not a diskgeo CSV" "$T/bad.csv" -o "$T/b1"
bad "one good, one bad profile" "not JSON" "$FIX" "$T/notjson.json" -o "$T/b1"
bad "unknown format" "unknown format 'gif'" "$FIX" -o "$T/b1" --format png,gif
bad "unknown option" "unrecognized" "$FIX" -o "$T/b1" --bogus
bad "output is a file" "not a directory" "$FIX" -o "$T/afile"
check "bad input created no output directory" [ ! -e "$T/b1" ]

# a failing run leaves an existing output directory exactly as it was
mkdir -p "$T/keep" && cp "$T/one/seek.png" "$T/keep/seek.png"
before=$(ls -lA --time-style=full-iso "$T/keep" | md5sum)
run keep "$FIX" "$T/schema.json" -o "$T/keep"
check "failing run into an existing directory exits 1" [ "$rc" -eq 1 ]
check "... and leaves it untouched" [ "$(ls -lA --time-style=full-iso "$T/keep" | md5sum)" = "$before" ]

# an unwritable output directory (not as root: root writes anyway)
if [ "$(id -u)" -ne 0 ]; then
	mkdir -p "$T/ro" && chmod 555 "$T/ro"
	bad "unwritable output directory" "not writable" "$FIX" -o "$T/ro"
fi

# ---- -o defaults to the current directory; --version
mkdir "$T/cwd"
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
(tool=$(abs "$TOOL") fix=$(abs "$FIX") && cd "$T/cwd" &&
	"$PY" "$tool" "$fix" --format png >"$T/cwd.out" 2>"$T/cwd.err")
check "no -o: the figures in the current directory" \
	sh -c "[ -f '$T/cwd/bandwidth.png' ] && grep -qx './bandwidth.png' '$T/cwd.out'"
run version --version
check "--version prints the version" grep -qx "diskgeo-plot [0-9][0-9.]*" "$T/version.out"

# ---- $HOME not writable (a cron job, a service account): a private MPLCONFIGDIR, no noise
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	mkdir "$T/nobody" && chmod 777 "$T/nobody" && chmod 755 "$T"
	env -u MPLCONFIGDIR HOME=/nonexistent setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$PY" "$TOOL" "$FIX" -o "$T/nobody" --format png >"$T/nobody.out" 2>"$T/nobody.err"
	check "as nobody with HOME unwritable: exit 0" [ $? -eq 0 ]
	check "... nothing on stderr" [ ! -s "$T/nobody.err" ]
	check "... the pictures written" png_ok "$T/nobody/seek.png" 20000 1200
	check "... no temporary config directory left behind" \
		sh -c "! ls -d /tmp/diskgeo-plot-mpl.* 2>/dev/null | grep -q ."
fi

# ---- --help carries a worked example
run help --help
check "--help exits 0" [ "$rc" -eq 0 ]
check "--help has a worked example" grep -q "Worked example" "$T/help.out"
check "--help shows the comparison" grep -q "diskgeo-plot red.json 7k1000.json -o compare/" "$T/help.out"
check "--help: no option text cut mid-sentence" grep -q "every figure's own title" "$T/help.out"

# ---- a python without matplotlib re-runs the tool under /usr/bin/python3
for other in $(echo "$PATH" | tr ':' ' '); do
	other=$other/python3
	[ -x "$other" ] || continue
	if ! "$other" -c 'import matplotlib' 2>/dev/null && [ -x /usr/bin/python3 ] &&
		/usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
		"$other" "$TOOL" "$FIX" -o "$T/reexec" --format png >"$T/reexec.out" 2>"$T/reexec.err"
		check "re-exec from $other (no matplotlib) under /usr/bin/python3" \
			png_ok "$T/reexec/iops.png" 20000 1200
		check "re-exec: each file listed once" [ "$(wc -l <"$T/reexec.out")" -eq 3 ]
		break
	fi
done

if [ "$fails" -ne 0 ]; then
	echo "test_plot: $fails check(s) failed"
	exit 1
fi
echo "test_plot: all checks passed"
