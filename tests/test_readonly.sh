#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The read-only guarantee (issue 7, item 1): every read mode leaves the device untouched.
# On a loop device this test creates over a file with a known pattern, each read command runs
#   - with the loop device's write counters (/sys/block/loopN/stat fields 5-8: write I/Os, write
#     merges, write sectors, write ticks) compared before and after: none may move;
#   - under strace -f (when installed): no open of the device or its backing file with O_WRONLY,
#     O_RDWR, O_CREAT or O_TRUNC, and no destructive ioctl (discard, zero-out);
# and at the end the backing file's checksum and mtime are what they were.
#
# Usage: tests/test_readonly.sh DISKGEO_BINARY        (root; exits 77 when it cannot run)
set -u
dg=$(readlink -f "${1:?usage: test_readonly.sh DISKGEO_BINARY}")
[ "$(id -u)" = 0 ] || { echo "test_readonly: needs root (loop device); skipped"; exit 77; }
command -v losetup >/dev/null || { echo "test_readonly: losetup missing; skipped"; exit 77; }

tmp=$(mktemp -d /tmp/diskgeo-readonly.XXXXXX)
loop=""
cleanup()
{
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# 256 MiB of a non-zero pattern, so that any write (even of zeros) changes the checksum.
backing="$tmp/backing.img"
python3 - "$backing" <<'EOF' || exit 1
import sys
block = bytes((i * 7 + 13) & 0xFF for i in range(1 << 20))
with open(sys.argv[1], "wb") as f:
    for i in range(256):
        f.write(block[i:] + block[:i])
EOF
touch -d '2001-01-01 00:00:00' "$backing"
sum_before=$(sha256sum <"$backing")
loop=$(losetup -f --show "$backing" 2>/dev/null) || { echo "test_readonly: no loop device; skipped"; exit 77; }
name=$(basename "$loop")
stat_file="/sys/block/$name/stat"
udevadm settle 2>/dev/null

have_strace=0
command -v strace >/dev/null && have_strace=1
# LeakSanitizer cannot run under ptrace: in a sanitizer build, leaks are left to the other tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
[ $have_strace = 1 ] || echo "test_readonly: strace not installed: the open-flags check is skipped"

fail=0
checks=0
# Fields 5-8 of the block stat file: the write counters.
writes() { awk '{print $5, $6, $7, $8}' "$stat_file"; }

# check NAME EXPECTED_RCS ARGS...: runs diskgeo ARGS on the loop device (ARGS contain @DEV@).
check()
{
	local label=$1 rcs=$2 args=() a rc before after
	shift 2
	for a in "$@"; do args+=("${a//@DEV@/$loop}"); done
	checks=$((checks + 1))
	local fail0=$fail
	before=$(writes)
	if [ $have_strace = 1 ]; then
		strace -f -qq -o "$tmp/strace.log" -e trace=open,openat,openat2,creat,ioctl \
			timeout -k 5 300 "$dg" "${args[@]}" >"$tmp/stdout" 2>"$tmp/stderr"
	else
		timeout -k 5 300 "$dg" "${args[@]}" >"$tmp/stdout" 2>"$tmp/stderr"
	fi
	rc=$?
	after=$(writes)
	if ! [[ " $rcs " == *" $rc "* ]]; then
		echo "FAIL $label: exit $rc (expected $rcs)"
		sed 's/^/    stderr: /' "$tmp/stderr" | head -n 10
		fail=$((fail + 1))
	fi
	if [ "$before" != "$after" ]; then
		echo "FAIL $label: write counters of $name moved: '$before' -> '$after'"
		fail=$((fail + 1))
	fi
	if [ $have_strace = 1 ]; then
		# Opens of the device or the backing file: read-only, never created or truncated.
		local opens bad
		opens=$(grep -E "open(at|at2)?\(.*\"($loop|$backing)\"" "$tmp/strace.log")
		if [ -z "$opens" ]; then
			echo "FAIL $label: strace saw no open of $loop"
			fail=$((fail + 1))
		fi
		bad=$(grep -E 'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC' <<<"$opens")
		if [ -n "$bad" ]; then
			echo "FAIL $label: opened the device for writing:"
			sed 's/^/    /' <<<"$bad"
			fail=$((fail + 1))
		fi
		# BLKDISCARD, BLKZEROOUT, BLKSECDISCARD destroy data without a write().
		bad=$(grep -E 'ioctl\(.*(BLKDISCARD|BLKZEROOUT|BLKSECDISCARD|BLKRRPART)' "$tmp/strace.log")
		if [ -n "$bad" ]; then
			echo "FAIL $label: destructive ioctl:"
			sed 's/^/    /' <<<"$bad"
			fail=$((fail + 1))
		fi
	fi
	[ $fail -eq $fail0 ] && echo "ok   $label: exit $rc, write counters unchanged ($after)"
}

check "probe" "0" probe @DEV@ --json "$tmp/probe.json"
check "read sequential" "0" read @DEV@ --length 64M --block-size 1M --qd 8 --json "$tmp/read.json"
check "read random" "0" read @DEV@ --random --block-size 4k --qd 32 --length 256M --json "$tmp/rand.json"
check "read psync" "0" read @DEV@ --engine psync --length 16M --json "$tmp/psync.json"
check "bandwidth" "0" bandwidth @DEV@ --samples 32 --json "$tmp/bw.json" --csv "$tmp/bw.csv"
check "seek" "0" seek @DEV@ --json "$tmp/seek.json" --csv "$tmp/seek.csv"
# `profile` joins once it is built (until then its absence is printed, not hidden).
if "$dg" profile --help >/dev/null 2>&1; then
	mkdir -p "$tmp/csv"
	check "profile" "0" profile @DEV@ --json "$tmp/profile.json" --csv-dir "$tmp/csv"
else
	echo "test_readonly: 'diskgeo profile' is not built yet: its case is left out"
fi

# The same modes on the backing file itself (a regular file DEVICE).
for f in probe read bandwidth; do
	checks=$((checks + 1))
	if [ $have_strace = 1 ]; then
		strace -f -qq -o "$tmp/strace.log" -e trace=open,openat,openat2,creat \
			timeout -k 5 300 "$dg" "$f" "$backing" >/dev/null 2>&1
		bad=$(grep -E "\"$backing\".*(O_WRONLY|O_RDWR|O_CREAT|O_TRUNC)" "$tmp/strace.log")
		if [ -n "$bad" ]; then
			echo "FAIL $f FILE: opened the file for writing: $bad"
			fail=$((fail + 1))
		fi
	else
		timeout -k 5 300 "$dg" "$f" "$backing" >/dev/null 2>&1
	fi
done

losetup -d "$loop"
loop=""
sum_after=$(sha256sum <"$backing")
checks=$((checks + 1))
if [ "$sum_before" != "$sum_after" ]; then
	echo "FAIL: the backing file's content changed"
	fail=$((fail + 1))
fi
if [ "$(stat -c %Y "$backing")" != 978307200 ]; then
	echo "FAIL: the backing file's mtime changed"
	fail=$((fail + 1))
fi
echo "test_readonly: $checks checks, $fail failures"
[ $fail -eq 0 ]
