#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The write guard (issue 15, items 1-3): `bandwidth --write` must never reach storage that is in
# use through another path, nor be redirected between its checks and its write open, nor write
# its own messages into the device.
#   1. Refused with exit 2 and one line naming what is in use (and how it shares the storage),
#      the image byte-identical after, when the target or anything sharing its storage is
#      mounted, swap or held: a second loop device over a mounted image, the image file itself,
#      the mounted loop device itself, the lower loop device and the image of a loop-over-loop
#      stack whose upper device is mounted, a loop device over a mounted loop device, a swap
#      file and a loop device over it, a loop device held by device-mapper. Controls: the same
#      stacks unmounted are written (exit 0), so the refusals are for the reason they name.
#   2. A symbolic link re-pointed while diskgeo waits between its read-only probe and its write
#      open (the device is held O_EXCL by this script meanwhile, which makes the wait
#      deterministic): the writes go to the device probed and named, the new target of the link
#      is byte-identical after.
#   3. With stderr closed (2>&-), the device's bytes outside the written samples are unchanged.
# Usage: tests/test_write_guard.sh DISKGEO_BINARY. Needs root, loop devices, mkfs.ext4 and
# python3; exits 77 (skipped) without them.
set -u
dg=$(readlink -f "${1:?usage: test_write_guard.sh DISKGEO_BINARY}")
PATH=$PATH:/usr/sbin:/sbin

[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
for t in losetup mkfs.ext4 mount python3 sha256sum; do
	command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }
done

tmp=$(mktemp -d /tmp/diskgeo-guard.XXXXXX)
loops=()   # loop devices this script attached, detached in reverse order
mounts=()  # mount points, unmounted first
swaps=()
dms=()
holder=""
cleanup()
{
	[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null; done
	for s in "${swaps[@]}"; do swapoff "$s" 2>/dev/null; done
	for d in "${dms[@]}"; do dmsetup remove "$d" 2>/dev/null; done
	for ((i = ${#loops[@]} - 1; i >= 0; i--)); do losetup -d "${loops[i]}" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# attach VAR FILE: a loop device over FILE into VAR (not in a subshell: `loops` must see it).
attach()
{
	local dev
	dev=$(losetup -f --show "$2") || return 1
	loops+=("$dev")
	printf -v "$1" %s "$dev"
}
detach_last()
{
	losetup -d "${loops[-1]}"
	unset 'loops[-1]'
}
# An ext4 file system that does not write behind our back once mounted (no lazy init).
mkfs()
{
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$1" >/dev/null 2>&1
}
mountit()
{
	mkdir -p "$2" && mount -o noatime "$1" "$2" && mounts+=("$2")
}
umount_last()
{
	umount "${mounts[-1]}"
	unset 'mounts[-1]'
}

pass=0
fail=0
ok() { pass=$((pass + 1)); printf 'ok   %s\n' "$1"; }
bad()
{
	fail=$((fail + 1))
	printf 'FAIL %s: %s\n' "$1" "$2"
	[ -s "$tmp/err" ] && sed 's/^/     stderr: /' "$tmp/err" | head -n 3
}

# refused NAME IMAGE REGEX DEVICE CONFIRM: exit 2, one line on stderr matching REGEX, IMAGE
# byte-identical.
refused()
{
	local name=$1 image=$2 re=$3 dev=$4 confirm=$5 before rc
	before=$(sha256sum <"$image")
	timeout -k 2 60 "$dg" bandwidth "$dev" --write --confirm-destroy="$confirm" --samples 16 \
		--sample-size 1M --no-refine >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ $rc -ne 2 ]; then
		bad "$name" "exit $rc, expected 2"
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		bad "$name" "$(wc -l <"$tmp/err") lines on stderr, expected 1"
	elif ! grep -Eq -- "$re" "$tmp/err"; then
		bad "$name" "the line does not match /$re/"
	elif [ "$(sha256sum <"$image")" != "$before" ]; then
		bad "$name" "the image changed"
	else
		ok "$name: $(cat "$tmp/err")"
	fi
}

# written NAME DEVICE CONFIRM: the control, exit 0.
written()
{
	local rc
	timeout -k 2 60 "$dg" bandwidth "$1" --write --confirm-destroy="$2" --samples 4 \
		--sample-size 1M --no-refine >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	[ $rc -eq 0 ] && ok "$3 (control: written)" || bad "$3 (control)" "exit $rc, expected 0"
}

# ---- 1. what shares the storage ----
img=$tmp/fs.img
truncate -s 64M "$img"
mkfs "$img" || { echo "skip: mkfs.ext4 failed"; exit 77; }
attach A "$img" || { echo "skip: no loop device"; exit 77; }
mountit "$A" "$tmp/mnt" || { echo "skip: cannot mount ext4 here"; exit 77; }
echo "precious" >"$tmp/mnt/file"
sync
attach B "$img"
mnt_re=$(printf '%s' "$tmp/mnt" | sed 's/[.[\*^$()+?{|]/\\&/g')
refused "second loop over a mounted image" "$img" "${A}.*mounted on $mnt_re.*refusing" "$B" "${B#/dev/}"
refused "the mounted image file itself" "$img" "${A}.*mounted on $mnt_re" "$img" fs.img
refused "the mounted loop device itself" "$img" "mounted on $mnt_re" "$A" "${A#/dev/}"
attach C "$A"
refused "a loop device over a mounted loop device" "$img" "${A}.*mounted on $mnt_re" "$C" "${C#/dev/}"
detach_last # C
detach_last # B
umount_last
attach B "$img"
written "$B" "${B#/dev/}" "second loop over an unmounted image"
detach_last

# Loop over loop: the upper device is mounted; the lower one and the image are refused.
low=$tmp/low.img
truncate -s 64M "$low"
attach L0 "$low"
attach L1 "$L0"
mkfs "$L1"
mountit "$L1" "$tmp/mnt2"
mnt2_re=$(printf '%s' "$tmp/mnt2" | sed 's/[.[\*^$()+?{|]/\\&/g')
refused "the lower loop of a mounted loop-over-loop" "$low" "${L1}.*mounted on $mnt2_re.*loop device over ${L0}" "$L0" "${L0#/dev/}"
refused "the image under a mounted loop-over-loop" "$low" "${L1}.*mounted on $mnt2_re" "$low" low.img
umount_last
written "$L0" "${L0#/dev/}" "the lower loop of an unmounted loop-over-loop"

# Swap: a swap file, and a loop device over it.
swp=$tmp/swap.img
truncate -s 64M "$swp"
chmod 600 "$swp"
if command -v mkswap >/dev/null && mkswap "$swp" >/dev/null 2>&1 && swapon "$swp" 2>/dev/null; then
	swaps+=("$swp")
	attach S "$swp"
	refused "a loop device over a swap file" "$swp" "swap\\.img is in use as swap" "$S" "${S#/dev/}"
	refused "a swap file" "$swp" "in use as swap" "$swp" swap.img
	detach_last
	swapoff "$swp" && unset 'swaps[-1]'
else
	echo "skip swap cases: swapon refused here"
fi

# Held: a device-mapper table over a loop device.
attach D "$low"
if command -v dmsetup >/dev/null &&
	dmsetup create "dg-guard-$$" --table "0 $((64 * 2048)) linear $D 0" 2>/dev/null; then
	dms+=("dg-guard-$$")
	refused "a loop device held by device-mapper" "$low" "dm-[0-9]+ holds ${D}" "$D" "${D#/dev/}"
	dmsetup remove "dg-guard-$$" && unset 'dms[-1]'
else
	echo "skip device-mapper case: dmsetup unavailable here"
fi
detach_last

# ---- 2. a symbolic link re-pointed between the probe and the write open ----
x=$tmp/x.img
y=$tmp/y.img
truncate -s 64M "$x" "$y"
attach X "$x"
attach Y "$y"
ln -s "$X" "$tmp/link"
ysum=$(sha256sum <"$y")
xsum=$(sha256sum <"$x")
# Hold X open O_EXCL: diskgeo probes it, then waits (up to 2 s) for the claim to go.
python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
open(sys.argv[2], "w").close()
time.sleep(30)' "$X" "$tmp/held" &
holder=$!
for _ in $(seq 200); do [ -e "$tmp/held" ] && break; sleep 0.01; done
"$dg" bandwidth "$tmp/link" --write --confirm-destroy="${X#/dev/}" --samples 4 --sample-size 1M \
	--no-refine >"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
# Once diskgeo holds X open (its read-only probe), re-point the link at Y, then let go of X.
probed=0
for _ in $(seq 150); do
	for f in /proc/$pid/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "$X" ] && probed=1
	done
	[ $probed = 1 ] && break
	sleep 0.01
done
ln -sfn "$Y" "$tmp/link"
kill "$holder"
wait "$holder" 2>/dev/null
holder=""
wait $pid
rc=$?
if [ $probed != 1 ]; then
	bad "symlink re-pointed before the write open" "diskgeo never held $X open (exit $rc)"
elif [ "$(sha256sum <"$y")" != "$ysum" ]; then
	bad "symlink re-pointed before the write open" "the link's new target $Y was written"
elif [ $rc -ne 0 ] || [ "$(sha256sum <"$x")" = "$xsum" ]; then
	bad "symlink re-pointed before the write open" "exit $rc; $X written: $([ "$(sha256sum <"$x")" = "$xsum" ] && echo no || echo yes)"
else
	ok "symlink re-pointed before the write open: $X (probed, named) written, $Y untouched"
fi

# ---- 3. stderr closed: nothing but the samples reaches the device ----
# closed_stderr NAME DEVICE CONFIRM ORIGINAL CURRENT: write with 2>&-, then compare CURRENT (the
# device's bytes) with ORIGINAL outside the ranges the profile lists as written.
closed_stderr()
{
	local name=$1 dev=$2 confirm=$3 orig=$4 now=$5 rc out
	"$dg" bandwidth "$dev" --write --confirm-destroy="$confirm" --samples 4 --sample-size 1M \
		--no-refine --json "$tmp/p.json" >"$tmp/out" 2>&- </dev/null
	rc=$?
	if [ $rc -ne 0 ]; then
		bad "$name" "exit $rc"
	elif out=$(python3 - "$orig" "$now" "$tmp/p.json" <<'EOF'
import json, sys
orig = open(sys.argv[1], "rb").read()
now = open(sys.argv[2], "rb").read()
doc = json.load(open(sys.argv[3]))
written = [(w["offset_bytes"], w["offset_bytes"] + w["length_bytes"]) for w in doc["bandwidth"]["written"]]
inside = lambda i: any(a <= i < b for a, b in written)
diff = [-1] if len(orig) != len(now) else []
for o in range(0, min(len(orig), len(now)), 4096):
    if orig[o:o + 4096] != now[o:o + 4096]:
        diff += [i for i in range(o, o + 4096) if orig[i] != now[i] and not inside(i)]
print(len(diff), sum(b - a for a, b in written))
sys.exit(1 if diff else 0)
EOF
	); then
		ok "$name: 0 bytes changed outside the $(echo "$out" | cut -d' ' -f2) bytes written"
	else
		bad "$name" "$(echo "$out" | cut -d' ' -f1) bytes changed outside the written samples"
	fi
}
pattern()
{
	python3 -c 'import sys
with open(sys.argv[1], "wb") as f:
    for i in range(64 * 256):
        f.write(bytes([(i * 7 + 1) & 0xff]) * 4096)' "$1"
}
p=$tmp/pattern.img
pattern "$p"
cp "$p" "$tmp/pattern.orig"
attach P "$p"
closed_stderr "stderr closed (loop device)" "$P" "${P#/dev/}" "$tmp/pattern.orig" "$p"
detach_last
# A file on tmpfs: O_DIRECT is refused there, so the descriptor is buffered and any stray
# write lands (the reviewer's 490 bytes at byte 0).
if shm=$(mktemp -d /dev/shm/diskgeo-guard.XXXXXX 2>/dev/null); then
	pattern "$shm/pattern.img"
	closed_stderr "stderr closed (file on tmpfs)" "$shm/pattern.img" pattern.img \
		"$tmp/pattern.orig" "$shm/pattern.img"
	rm -rf "$shm"
else
	echo "skip tmpfs case: no /dev/shm"
fi

echo "test_write_guard: $pass passed, $fail failed"
[ $fail -eq 0 ]
