#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# diskgeo-simdisk trusts nothing in its state directory (issue 15, item 15):
#  - a state directory that is not the effective user's, is writable by group or others, or is a
#    symbolic link is refused (attach, detach, list: exit 1, one line naming it);
#  - a planted state file (in a directory that passes, or not) that names someone else's loop
#    device, mount and process touches none of them;
#  - a detach refused because the loop device is busy leaves nothing behind once the device's
#    last user closes it: the daemon unmounts, exits and removes the state by itself;
#  - a spec that is a FIFO is refused at once (no hang).
# Needs root, /dev/fuse and loop devices (else exit 77). Everything it creates (victim loop
# device, tmpfs mount, processes) is its own and is removed at exit.
#
# Usage: tests/test_simdisk_state.sh DISKGEO_SIMDISK_BINARY
set -u
sd=$(readlink -f "${1:?usage: test_simdisk_state.sh DISKGEO_SIMDISK_BINARY}")
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v losetup >/dev/null || { echo "SKIP: no losetup"; exit 77; }

tmp=$(mktemp -d /tmp/diskgeo-sdstate.XXXXXX)
chmod 755 "$tmp"
victim_loop=""
victim_mnt="$tmp/victim-mnt"
victim_pid=""
attached=""
cleanup()
{
	local m s p
	[ -n "$attached" ] && DISKGEO_SIMDISK_RUNDIR="$tmp/run" "$sd" detach "$attached" >/dev/null 2>&1
	# whatever a failing binary left under $tmp: its daemons (this binary only) and mounts
	for s in "$tmp"/*/sim-*/state; do
		[ -f "$s" ] || continue
		p=$(awk -F= '$1 == "pid" {print $2}' "$s")
		[ -n "$p" ] && [ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" = "$sd" ] && kill -9 "$p"
	done
	for m in $(awk -v t="$tmp/" 'index($2, t) == 1 && $2 != t "victim-mnt" {print $2}' /proc/mounts); do
		umount -l "$m"
	done
	[ -n "$victim_pid" ] && kill "$victim_pid" 2>/dev/null
	mountpoint -q "$victim_mnt" 2>/dev/null && umount "$victim_mnt"
	[ -n "$victim_loop" ] && losetup -d "$victim_loop" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

fail=0
n=0
ok() { n=$((n + 1)); printf 'ok   %2d %s\n' "$n" "$1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); printf 'FAIL %2d %s: %s\n' "$n" "$1" "$2"; }

# The victims: a loop device, a mount and a process that a planted state file names.
truncate -s 8M "$tmp/victim.img"
victim_loop=$(losetup -f --show "$tmp/victim.img") || { echo "SKIP: losetup failed"; exit 77; }
mkdir "$victim_mnt"
mount -t tmpfs -o size=1M tmpfs "$victim_mnt" || { echo "SKIP: cannot mount tmpfs"; exit 77; }
sleep 300 &
victim_pid=$!
victim_start=$(awk '{print $22}' "/proc/$victim_pid/stat")

victims_intact()
{
	[ "$(cat "/sys/block/${victim_loop#/dev/}/loop/backing_file" 2>/dev/null)" = "$tmp/victim.img" ] ||
		{ echo "the victim loop device was detached"; return 1; }
	mountpoint -q "$victim_mnt" || { echo "the victim mount was unmounted"; return 1; }
	kill -0 "$victim_pid" 2>/dev/null || { echo "the victim process was killed"; return 1; }
	return 0
}

# plant DIR MNT FILE: a state file in DIR naming the victims
plant()
{
	mkdir -p "$1"
	printf 'spec=cheetah-15k\nmountpoint=%s\nfile=%s\npid=%d\nstarttime=%s\nloop=%s\n' \
		"$2" "$3" "$victim_pid" "$victim_start" "$victim_loop" >"$1/state"
}

# expect NAME WANT_RC REGEX -- ARGS...: runs the daemon's CLI (10 s limit), checks the exit code,
# one line on stderr matching REGEX, and that the victims are intact.
expect()
{
	local name=$1 want=$2 re=$3 rc why=""
	shift 4
	timeout -k 2 20 "$sd" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -ne "$want" ]; then
		why="exit $rc, expected $want"
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		why="stderr has $(wc -l <"$tmp/err") lines, expected 1"
	elif ! grep -Eq -- "$re" "$tmp/err"; then
		why="message does not match /$re/"
	elif ! why=$(victims_intact); then
		:
	fi
	if [ -n "$why" ]; then
		bad "$name" "$why"
		sed 's/^/         stderr: /' "$tmp/err" | head -n 3
	else
		ok "$name"
	fi
}

# 1. A world-writable state directory with a planted state file naming the victims.
export DISKGEO_SIMDISK_RUNDIR="$tmp/ww"
mkdir -m 777 "$tmp/ww"
chmod 777 "$tmp/ww"
plant "$tmp/ww/sim-planted" "$victim_mnt" "$tmp/victim.img"
expect "detach: world-writable state directory refused" 1 "ww: the state directory must be owned by uid 0 and writable by no one else .*mode 0777" -- detach "$victim_loop"
expect "list: world-writable state directory refused" 1 "ww: the state directory must be owned by uid 0" -- list
expect "attach: world-writable state directory refused" 1 "ww: the state directory must be owned by uid 0" -- attach cheetah-15k
[ -z "$(ls "$tmp/ww" | grep -v sim-planted)" ] && ok "attach created nothing in it" ||
	bad "attach created nothing in it" "$(ls "$tmp/ww")"

# 2. A state directory owned by another user (mode 0700), and a symbolic link to a good one.
export DISKGEO_SIMDISK_RUNDIR="$tmp/other"
mkdir -m 700 "$tmp/other"
chown 65534:65534 "$tmp/other"
expect "detach: state directory of another user refused" 1 "other: the state directory must be owned by uid 0 .*owned by uid 65534" -- detach "$victim_loop"
mkdir -m 700 "$tmp/good"
ln -s "$tmp/good" "$tmp/link"
export DISKGEO_SIMDISK_RUNDIR="$tmp/link"
expect "detach: symlinked state directory refused" 1 "link: the state directory is a symbolic link" -- detach "$victim_loop"

# 3. A private state directory (as root made it) holding forged state files.
export DISKGEO_SIMDISK_RUNDIR="$tmp/priv"
mkdir -m 700 "$tmp/priv"
plant "$tmp/priv/sim-forged1" "$victim_mnt" "$tmp/victim.img"
chmod 700 "$tmp/priv/sim-forged1"
expect "detach: state naming a foreign mount and file is not an instance" 1 "not attached by diskgeo-simdisk" -- detach "$victim_loop"
rm -rf "$tmp/priv/sim-forged1"
# the paths attach would use, but the loop, mount and pid are someone else's: forged pid
plant "$tmp/priv/sim-forged2" "$tmp/priv/sim-forged2/mnt" "$tmp/priv/sim-forged2/mnt/disk"
chmod 700 "$tmp/priv/sim-forged2"
expect "detach: forged pid, loop and mount left alone" 0 "no longer bound" -- detach "$victim_loop"
# an instance directory writable by others is never read
plant "$tmp/priv/sim-forged3" "$tmp/priv/sim-forged3/mnt" "$tmp/priv/sim-forged3/mnt/disk"
chmod 777 "$tmp/priv/sim-forged3"
expect "detach: instance directory writable by others ignored" 1 "not attached by diskgeo-simdisk" -- detach "$victim_loop"
rm -rf "$tmp/priv/sim-forged3"

# 4. A spec that is a FIFO: refused at once.
mkfifo "$tmp/spec.fifo"
expect "attach FIFO refused" 1 "spec.fifo: a drive spec must be a regular file, not a FIFO" -- attach "$tmp/spec.fifo"

# 5. detach while the loop device is busy, then its user closes it.
export DISKGEO_SIMDISK_RUNDIR="$tmp/run"
attached=$("$sd" attach cheetah-15k 2>"$tmp/err") || { bad "attach" "$(cat "$tmp/err")"; attached=""; }
if [ -n "$attached" ]; then
	inst=$(ls -d "$tmp/run"/sim-*)
	daemon=$(awk -F= '$1 == "pid" {print $2}' "$inst/state")
	sleep 60 <"$attached" &
	holder=$!
	# the child opens the device after the fork: detach only once it holds it (under load the
	# detach below ran first and found the device free, exit 0)
	for _ in $(seq 500); do
		[ "$(readlink "/proc/$holder/fd/0" 2>/dev/null)" = "$attached" ] && break
		sleep 0.01
	done
	expect "detach of a busy device refused with the way out" 2 "is in use: the kernel detaches it when its last user closes it, and the daemon then unmounts and removes .* by itself" -- detach "$attached"
	if [ -d "$inst" ] && kill -0 "$daemon" 2>/dev/null; then
		ok "busy: the instance stays while the device is in use"
	else
		bad "busy: the instance stays while the device is in use" "gone early"
	fi
	kill "$holder"
	wait "$holder" 2>/dev/null
	# bound to this instance's file: another test running beside this one may have been
	# given the same loop number once it was free
	bound()
	{
		grep -qs "^$inst/" "/sys/block/${attached#/dev/}/loop/backing_file"
	}
	for _ in $(seq 100); do
		[ ! -d "$inst" ] && ! kill -0 "$daemon" 2>/dev/null && ! bound && break
		sleep 0.1
	done
	why=""
	bound && why="the loop device is still bound"
	grep -q " $inst/mnt " /proc/mounts && why="$why; the FUSE mount is still there"
	kill -0 "$daemon" 2>/dev/null && why="$why; the daemon (pid $daemon) still runs"
	[ -d "$inst" ] && why="$why; the state directory $inst is still there"
	if [ -z "$why" ]; then
		ok "busy: once the device is closed, loop, mount, daemon and state are gone"
		attached=""
	else
		bad "busy: once the device is closed, loop, mount, daemon and state are gone" "$why"
	fi
fi

echo "test_simdisk_state: $n cases, $fail failed"
[ $fail -eq 0 ]
