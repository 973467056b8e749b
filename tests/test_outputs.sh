#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Output paths (issue 15, items 4, 5, 13, 14): where --json, --csv and --csv-dir really write.
#   - a character device, FIFO, process substitution or one of our descriptors is written
#     directly, never replaced by a renamed file (/dev/null stays a character device);
#   - an output that is the DEVICE (same inode through a symlink or hard link, the same block
#     device, a loop device's backing file, standard output appended to it) is refused with
#     exit 1 before any I/O: the device's bytes (and a loop device's read counter) do not move;
#   - every output is checked before the run (a closed descriptor, a name over NAME_MAX, a full
#     file system): exit 1, one line naming the reason, nothing measured (empty stdout);
#   - a write that fails after the run (ENOSPC) names the real errno, and the other outputs,
#     the JSON profile first, are still written; exit 1;
#   - names of 250-255 bytes work (the temporary name is short);
#   - paths that are not UTF-8 give valid JSON with each bad byte as \xHH; control characters in
#     a spec's name reach no terminal raw (model, probe, the write refusal).
# Cases needing root (a private null device, tmpfs, loop devices, another user's symlink) are
# skipped otherwise; the others run anywhere.
#
# Usage: tests/test_outputs.sh DISKGEO_BINARY SOURCE_DIR     (exit 0 when every case passed)
set -u
dg=$(readlink -f "${1:?usage: test_outputs.sh DISKGEO_BINARY SOURCE_DIR}")
src=$(readlink -f "${2:?usage: test_outputs.sh DISKGEO_BINARY SOURCE_DIR}")
good="$src/tests/badinput/good.json"
root=0
[ "$(id -u)" = 0 ] && root=1

tmp=$(mktemp -d /tmp/diskgeo-outputs.XXXXXX)
chmod 755 "$tmp"
mnt=""
loops=()
cleanup()
{
	[ -n "$mnt" ] && umount "$mnt" 2>/dev/null
	chattr -i "$tmp/immutable.json" 2>/dev/null
	local l
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1

pass=0
fail=0
skip=0
ok() { pass=$((pass + 1)); printf 'ok   %s\n' "$1"; }
bad()
{
	fail=$((fail + 1))
	printf 'FAIL %s: %s\n' "$1" "$2"
	[ -s err ] && sed 's/^/         stderr: /' err | head -n 3
}
skipped() { skip=$((skip + 1)); printf 'skip %s: %s\n' "$1" "$2"; }
# run ARGS...: diskgeo with stdout in ./out, stderr in ./err, 20 s at most; sets $rc.
run()
{
	timeout -k 2 20 "$dg" "$@" >out 2>err </dev/null
	rc=$?
}
valid_json() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
# refused NAME REGEX: the last run exited 1 with one line matching REGEX, before measuring.
refused()
{
	local lines
	lines=$(grep -vc '^diskgeo: warning: .* is a regular file' err)
	if [ $rc -ne 1 ]; then
		bad "$1" "exit $rc, expected 1"
	elif [ "$lines" -ne 1 ]; then
		bad "$1" "$lines lines on stderr, expected 1"
	elif ! grep -Eq -- "$2" err; then
		bad "$1" "stderr does not match /$2/"
	elif [ -s out ]; then
		bad "$1" "something was measured (stdout not empty)"
	else
		return 0
	fi
	return 1
}

truncate -s 64M disk.img
printf 'pattern' | dd of=disk.img bs=1 seek=4096 conv=notrunc status=none
disk_sum=$(sha256sum <disk.img)
sim=sim:wd-red-4tb

# ---- item 4: non-regular targets are written, never replaced ----
run probe "$sim" --json /dev/null
if [ ! -c /dev/null ]; then
	# Put the system's /dev/null back before anything else runs.
	rm -f /dev/null && mknod -m 666 /dev/null c 1 3
	bad "--json /dev/null" "/dev/null was replaced by a file"
elif [ $rc -ne 0 ] || [ "$(stat -c '%t:%T' /dev/null)" != 1:3 ]; then
	bad "--json /dev/null" "exit $rc, /dev/null $(stat -c '%F %t:%T' /dev/null)"
else
	ok "--json /dev/null: exit 0, /dev/null still the character device 1:3"
fi

if [ $root = 1 ]; then
	mknod -m 666 null c 1 3
	run read "$sim" --length 1M --json null
	if [ $rc -eq 0 ] && [ -c null ] && [ "$(stat -c '%t:%T' null)" = 1:3 ]; then
		ok "--json a private null device node: exit 0, still a character device"
	else
		bad "--json a private null device node" "exit $rc, now $(stat -c %F null)"
	fi
else
	skipped "--json a private null device node" "mknod needs root"
fi

mkfifo fifo
timeout 20 cat fifo >from-fifo &
reader=$!
run profile "$sim" --no-seek -n 64 --no-refine --json fifo
wait $reader
if [ $rc -eq 0 ] && [ -p fifo ] && valid_json from-fifo &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d["bandwidth"]["samples"]) != 64)' from-fifo; then
	ok "--json FIFO: the reader got the profile (64 samples), the FIFO is still a FIFO"
else
	bad "--json FIFO" "exit $rc, reader got $(wc -c <from-fifo) bytes, fifo is $(stat -c %F fifo)"
fi

timeout -k 2 20 "$dg" probe "$sim" --json >(cat >from-procsub) >out 2>err </dev/null
rc=$?
sleep 0.5
if [ $rc -eq 0 ] && valid_json from-procsub; then
	ok "--json >(cat): the process substitution got the document"
else
	bad "--json >(cat)" "exit $rc, got $(wc -c <from-procsub 2>/dev/null) bytes"
fi

# An appended descriptor keeps what it had: written through the descriptor, as by a shell.
echo first >log
timeout -k 2 20 "$dg" probe "$sim" --json /dev/fd/3 3>>log >out 2>err </dev/null
rc=$?
if [ $rc -eq 0 ] && [ "$(head -n 1 log)" = first ] && tail -n +2 log | python3 -c 'import json,sys; json.load(sys.stdin)' 2>/dev/null; then
	ok "--json /dev/fd/3 3>>log: the JSON follows the log's first line"
else
	bad "--json /dev/fd/3 3>>log" "exit $rc; log starts '$(head -c 20 log)'"
fi

ln -s /proc/self/fd/1 to-stdout.json
timeout -k 2 20 "$dg" read "$sim" --length 1M --json to-stdout.json >stdout-file 2>err </dev/null
rc=$?
if [ $rc -eq 0 ] && [ -L to-stdout.json ] && grep -q '"read"' stdout-file && grep -q '^read sim:' stdout-file; then
	ok "--json LINK-TO-/proc/self/fd/1: summary and JSON on standard output, the link kept"
else
	bad "--json LINK-TO-/proc/self/fd/1" "exit $rc; link $(stat -c %F to-stdout.json)"
fi

echo '{"old": true}' >real.json
ln -s real.json link.json
run probe "$sim" --json link.json
if [ $rc -eq 0 ] && [ -L link.json ] && [ "$(readlink link.json)" = real.json ] && grep -q '"schema"' real.json; then
	ok "--json SYMLINK: the link stays, the file it names is replaced"
else
	bad "--json SYMLINK" "exit $rc; link.json is $(stat -c %F link.json)"
fi

# ---- item 4: an output that is the DEVICE ----
ln disk.img hard.img
ln -s disk.img sym.img
for target in disk.img hard.img sym.img "$tmp/disk.img"; do
	run read disk.img --length 1M --json "$target"
	if refused "read disk.img --json $target" "is the device being measured" &&
		[ "$(sha256sum <disk.img)" = "$disk_sum" ] && [ "$(stat -c %s disk.img)" = 67108864 ]; then
		ok "read disk.img --json $target: exit 1 before the run, the image unchanged"
	fi
done
run bandwidth disk.img -n 4 -s 1M --no-refine --csv sym.img
refused "bandwidth --csv SYMLINK-TO-DEVICE" "sym.img: is the device" &&
	[ "$(sha256sum <disk.img)" = "$disk_sum" ] && ok "bandwidth disk.img --csv sym.img: refused, image unchanged"
run profile disk.img --no-seek -n 4 -s 1M --no-refine --json disk.img
refused "profile --json DEVICE" "is the device" && ok "profile disk.img --json disk.img: refused"
run probe disk.img --json hard.img
refused "probe --json HARDLINK" "is the device" && ok "probe disk.img --json hard.img: refused"
timeout -k 2 20 "$dg" read disk.img --length 1M --json - >>disk.img 2>err </dev/null
rc=$?
: >out
refused "--json - >>DEVICE" "standard output: is the device" && [ "$(stat -c %s disk.img)" = 67108864 ] &&
	ok "read disk.img --json - >>disk.img: refused, nothing appended"
timeout -k 2 20 "$dg" read disk.img --length 1M --json /dev/fd/3 3<>disk.img >out 2>err </dev/null
rc=$?
refused "read DEVICE --json /dev/fd/3 3<>DEVICE" "/dev/fd/3: is the device being measured" &&
	[ "$(sha256sum <disk.img)" = "$disk_sum" ] && ok "read disk.img --json /dev/fd/3 3<>disk.img: refused, unchanged"
cp "$good" spec.json
run model spec.json --json spec.json
refused "model SPEC --json SPEC" "is the device" && cmp -s spec.json "$good" && ok "model spec.json --json spec.json: refused, the spec kept"
run probe sim:spec.json --json spec.json
refused "probe sim:SPEC --json SPEC" "is the device" && cmp -s spec.json "$good" && ok "probe sim:spec.json --json spec.json: refused"

if [ $root = 1 ] && command -v losetup >/dev/null && loop=$(losetup -f --show disk.img 2>/dev/null); then
	loops+=("$loop")
	loop2=$(losetup -f --show spec.json 2>/dev/null) && loops+=("$loop2")
	reads() { awk '{print $1}' "/sys/block/$(basename "$loop")/stat"; }
	udevadm settle 2>/dev/null
	before=$(reads)
	# Refused as a block device, before the device is even opened.
	run read "$loop" --length 1M --json "$loop"
	refused "read LOOP --json LOOP" "is a block device" && [ "$(reads)" = "$before" ] &&
		ok "read $loop --json $loop: refused with no read on the device (read I/Os stay $before)"
	ln -s "$loop" loop-link
	run seek "$loop" --distances 4 --samples 2 --csv loop-link
	refused "seek LOOP --csv LINK-TO-LOOP" "loop-link: is a block device" && [ "$(reads)" = "$before" ] &&
		ok "seek $loop --csv link-to-it: refused before any read"
	run read "$loop" --length 1M --json disk.img
	refused "read LOOP --json BACKING-FILE" "disk.img: is the device being measured" &&
		[ "$(sha256sum <disk.img)" = "$disk_sum" ] && ok "read $loop --json its backing file: refused, unchanged"
	if [ -n "${loop2:-}" ]; then
		run probe "$loop" --json "$loop2"
		refused "probe LOOP --json OTHER-BLOCK-DEVICE" "is a block device" && ok "probe --json another block device: refused"
	fi
	[ "$(sha256sum <disk.img)" = "$disk_sum" ] || bad "loop cases" "disk.img changed"
else
	skipped "output == loop device" "needs root and a loop device"
fi

# ---- item 5: every output checked before the run ----
timeout -k 2 20 "$dg" profile "$sim" --no-seek -n 64 --no-refine --json /dev/fd/3 3>&- >out 2>err </dev/null
rc=$?
refused "--json /dev/fd/3 (closed)" "/dev/fd/3: file descriptor 3 is not open" && ok "--json /dev/fd/3 with fd 3 closed: refused before the run"
timeout -k 2 20 "$dg" read "$sim" --length 1M --json /dev/fd/3 3<disk.img >out 2>err </dev/null
rc=$?
refused "--json /dev/fd/3 (read-only)" "file descriptor 3 is not open for writing" && ok "--json /dev/fd/3 3<file: refused, not open for writing"
name250=$(printf 'n%.0s' $(seq 245)).json
run profile "$sim" --no-seek -n 64 --no-refine --json "$name250"
if [ $rc -eq 0 ] && valid_json "$name250" && [ -z "$(ls -A | grep '^\.diskgeo\.tmp')" ]; then
	ok "a 250-byte output name: written, no temporary left"
else
	bad "a 250-byte output name" "exit $rc"
fi
name255=$(printf 'm%.0s' $(seq 250)).json
run read "$sim" --length 1M --json "$name255"
if [ $rc -eq 0 ] && valid_json "$name255"; then ok "a 255-byte output name: written"; else bad "a 255-byte output name" "exit $rc"; fi
run seek "$sim" --distances 4 --samples 2 --csv "$(printf 'x%.0s' $(seq 256))"
refused "a 256-byte output name" "too long" && ok "a 256-byte output name: refused before the run"
run profile "$sim" --no-seek -n 64 --no-refine --json missing-dir/p.json
refused "--json in a missing directory" "missing-dir.*No such file" && ok "--json in a missing directory: refused"
run probe "$sim" --json /proc/self/p.json
refused "--json in /proc" "cannot create a file in /proc" && ok "--json in /proc: refused (no file can be created there)"

if [ $root = 1 ] && mkdir small && mount -t tmpfs -o size=64k diskgeo-outputs small 2>/dev/null; then
	mnt="$tmp/small"
	# 24 KiB left: room for zones.csv, seek.csv and iops.csv, not for 2000 curve samples.
	head -c 40k /dev/zero >small/fill
	run profile "$sim" -n 2000 --no-refine --distances 8 --seek-samples 2 --csv-dir small/csv --json p.json
	if [ $rc -ne 1 ]; then
		bad "--csv-dir on a full file system" "exit $rc, expected 1"
	elif ! grep -q 'small/csv/bandwidth.csv: write failed: No space left on device' err; then
		bad "--csv-dir on a full file system" "the line does not name ENOSPC"
	elif ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d["bandwidth"]["samples"]) != 2000)' p.json 2>/dev/null; then
		bad "--csv-dir on a full file system" "the JSON profile did not land"
	elif [ ! -s small/csv/zones.csv ] || [ ! -s small/csv/seek.csv ] || [ -e small/csv/bandwidth.csv ] ||
		[ -n "$(ls -A small/csv | grep '^\.diskgeo\.tmp')" ]; then
		bad "--csv-dir on a full file system" "CSVs: $(ls -A small/csv | tr '\n' ' ')"
	else
		ok "--csv-dir on a full file system: 'No space left on device', exit 1, the JSON (2000 samples) and the CSVs that fit written, no temporary left"
	fi
	run bandwidth "$sim" -n 2000 --no-refine --csv small/b.csv --json b.json
	if [ $rc -eq 1 ] && grep -q 'small/b.csv: write failed: No space left on device' err &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d["bandwidth"]["samples"]) != 2000)' b.json 2>/dev/null &&
		[ ! -e small/b.csv ]; then
		ok "bandwidth --csv on a full file system: ENOSPC named, exit 1, the JSON written"
	else
		bad "bandwidth --csv on a full file system" "exit $rc"
	fi
	head -c 64k /dev/zero >small/fill2 2>/dev/null
	run profile "$sim" -n 64 --no-refine --csv-dir small/csv2 --json p2.json
	refused "--csv-dir on a file system already full" "No space left on device" && [ ! -e p2.json ] &&
		ok "--csv-dir on a file system already full: refused before the run"
	run read "$sim" --length 1M --json small/r.json
	refused "--json on a file system already full" "No space left on device" && ok "--json on a file system already full: refused before the run"
	umount small && mnt=""
else
	skipped "ENOSPC" "needs root (tmpfs)"
fi

# A symlink planted by another user in a shared sticky directory is not followed.
if [ $root = 1 ] && id nobody >/dev/null 2>&1; then
	mkdir -m 1777 shared
	echo precious >victim
	ln -s "$tmp/victim" shared/out.json
	chown -h nobody shared/out.json
	run probe "$sim" --json shared/out.json
	refused "--json another user's symlink in a sticky directory" "not followed" &&
		[ "$(cat victim)" = precious ] && ok "--json another user's symlink in /tmp-like directory: refused, its target untouched"
else
	skipped "another user's symlink" "needs root"
fi

# An immutable output cannot be renamed over, even by root: found before the run.
echo '{"kept": true}' >immutable.json
if [ $root = 1 ] && chattr +i immutable.json 2>/dev/null; then
	run profile "$sim" --no-seek -n 64 --no-refine --json immutable.json
	chattr -i immutable.json
	refused "--json an immutable file" "immutable.json: is immutable" && grep -q kept immutable.json &&
		ok "--json an immutable file: refused before the run"
else
	skipped "--json an immutable file" "needs root and chattr"
fi

# ---- item 13: paths that are not UTF-8 ----
latin=$(printf 'lat\xe9n')
truncate -s 8M "$latin.img"
for cmd in probe read; do
	run $cmd "$latin.img" --json j.json
	if [ $rc -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["device"]["path"] != "lat\\xE9n.img" or not any("lat\\xE9n.img" in w for w in d["warnings"]))' j.json; then
		ok "$cmd on a non-UTF-8 file name: valid JSON, path and warning as lat\\xE9n.img"
	else
		bad "$cmd on a non-UTF-8 file name" "exit $rc"
	fi
done
python3 - "$good" "$latin.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
del d["name"]  # the name then comes from the file's name
json.dump(d, open(sys.argv[2].encode("utf-8", "surrogateescape"), "w"))
EOF
run model "$latin.json" --json m.json
if [ $rc -eq 0 ] && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["name"] != "lat\\xE9n")' m.json; then
	ok "model on a spec named lat\\xE9n.json: valid JSON, name lat\\xE9n"
else
	bad "model on a non-UTF-8 spec name" "exit $rc"
fi
run read "sim:$latin.json" --offset 1M --length 1M --json b.json
if [ $rc -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["device"]; sys.exit(d["path"] != "sim:lat\\xE9n.json")' b.json; then
	ok "read sim:lat\\xE9n.json: valid JSON after the run"
else
	bad "read on a non-UTF-8 sim: spec" "exit $rc"
fi
if [ $root = 1 ] && command -v losetup >/dev/null && l=$(losetup -f --show "$latin.img" 2>/dev/null); then
	loops+=("$l")
	run probe "$l" --json l.json
	if [ $rc -eq 0 ] && python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["device"]["loop_backing_file"].endswith("/lat\\xE9n.img"))' l.json; then
		ok "probe a loop device over lat\\xE9n.img: loop_backing_file escaped"
	else
		bad "probe a loop device over a non-UTF-8 file" "exit $rc"
	fi
else
	skipped "non-UTF-8 loop backing file" "needs root and a loop device"
fi

# ---- item 14: control characters reach no terminal raw ----
python3 - "$good" ctl.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["name"] = "evil\x1b]0;owned\x07\nname"
d["description"] = "red\x1b[31m\x9b2J\ttab"
json.dump(d, open(sys.argv[2], "w"))
EOF
raw() { LC_ALL=C grep -c $'[\x1b\x07]' "$@"; }
run model ctl.json
if [ $rc -eq 0 ] && [ "$(raw out)" = 0 ] && grep -qF 'drive: evil\x1B]0;owned\x07\nname' out &&
	grep -qF 'red\x1B[31m\u009B2J\ttab' out; then
	ok "model: ESC, BEL, newline, tab and CSI (U+009B) in a spec's name shown escaped"
else
	bad "model with control characters" "exit $rc, $(raw out) raw lines"
fi
run probe sim:ctl.json
if [ $rc -eq 0 ] && [ "$(raw out)" = 0 ] && grep -qF 'evil\x1B]0;owned\x07\nname' out; then
	ok "probe: the spec's name escaped in the table"
else
	bad "probe with control characters" "exit $rc, $(raw out) raw lines"
fi
run bandwidth sim:ctl.json --write --confirm-destroy=wrong -n 4 --no-refine
if [ $rc -eq 1 ] && [ "$(raw err)" = 0 ] && [ "$(wc -l <err)" = 1 ] && grep -qF 'evil\x1B]0;owned\x07\nname' err; then
	ok "the write refusal: one line, the spec's name escaped"
else
	bad "the write refusal with control characters" "exit $rc, $(wc -l <err) lines, $(raw err) raw"
fi
ctl=$(printf 'c\x1bd')
run probe "$ctl"
if [ $rc -eq 2 ] && [ "$(raw err)" = 0 ] && grep -qF 'c\x1Bd' err; then
	ok "a DEVICE name with ESC: the error line escaped"
else
	bad "a DEVICE name with ESC" "exit $rc, $(raw err) raw"
fi

printf '%d passed, %d failed, %d skipped\n' $pass $fail $skip
[ $fail = 0 ]
