#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bad-input suite (issue 7, item 3): every way a user can hand diskgeo something wrong.
# Each case asserts, per contract.md:
#   - the contract's exit code (1 bad usage or input, 2 device could not be opened or probed);
#     never a crash (>= 128), a sanitizer exit, or a hang (10 s limit);
#   - exactly one line on stderr, starting with "diskgeo:" (and naming what was wrong, where the
#     case says so); unknown commands and options may follow that line with the usage text;
#   - no output file created, an existing output file untouched, no temporary file left behind.
# Run by ctest (tests/CMakeLists.txt); also in the sanitizer build, where an ASan/UBSan/LSan
# report breaks the one-line rule or the exit code and so fails the case.
#
# Usage: tests/badinput.sh DISKGEO_BINARY SOURCE_DIR
# Cases needing root (no permission as nobody, a read-only mount) run only as root; the others
# run anywhere. Exit 0 when every case passed, 1 otherwise.
set -u
dg=${1:?usage: badinput.sh DISKGEO_BINARY SOURCE_DIR}
src=${2:?usage: badinput.sh DISKGEO_BINARY SOURCE_DIR}
specs="$src/tests/badinput"
dg=$(readlink -f "$dg")

tmp=$(mktemp -d /tmp/diskgeo-badinput.XXXXXX)
chmod 755 "$tmp"
cleanup()
{
	[ -n "${romnt:-}" ] && umount "$romnt" 2>/dev/null
	[ -n "${imm:-}" ] && chattr -i "$imm" 2>/dev/null
	[ -n "${immf:-}" ] && chattr -i "$immf" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

out="$tmp/out"		# output files of the cases; must stay empty
mkdir -p "$out"
chmod 777 "$out"
old="$tmp/old.json"	# an existing output file a failed run must not touch
printf '{"precious": true}\n' >"$old"
touch -d '2001-01-01 00:00:00' "$old"
old_sum=$(sha256sum <"$old")

pass=0
fail=0
skip=0
xfail=0
n=0
# Known failures, each a bug reported to its owner: the case runs and prints XFAIL instead of
# failing the suite; when it passes it prints XPASS, the sign to delete it from this list.
known_failures=()
as=() # prefix for the next case: run as another user

# run_case EXPECTED_RC NAME [--grep REGEX] -- ARGS...
# In ARGS, @NEW@ is an output path that must not exist afterwards; @OLD@ is the existing file.
run_case()
{
	local want=$1 name=$2 grep=""
	shift 2
	if [ "$1" = "--grep" ]; then
		grep=$2
		shift 2
	fi
	[ "$1" = "--" ] && shift
	n=$((n + 1))
	local newpath="$out/case$n.json" args=() a
	for a in "$@"; do
		a=${a//@NEW@/$newpath}
		a=${a//@OLD@/$old}
		args+=("$a")
	done
	local errf="$tmp/stderr" rc why=""
	timeout -k 2 10 "${as[@]}" "$dg" "${args[@]}" >"$tmp/stdout" 2>"$errf" </dev/null
	rc=$?
	# A regular-file DEVICE earns a "diskgeo: warning: ... is a regular file" line before the
	# error (the file is opened before its sector size can check the options): cases on files
	# (warn_ok=1) skip that line; every other case must print exactly one line.
	if [ "$warn_ok" = 1 ]; then
		grep -v '^diskgeo: warning: .* is a regular file' "$errf" >"$errf.1"
		mv "$errf.1" "$errf"
	fi
	# Unknown commands and options may follow their line with the usage text (issue 2); a bare
	# `diskgeo` may print the usage alone.
	local usage_seen=0
	if [ "$usage_ok" = 1 ] && grep -q '^Usage:' "$errf"; then
		usage_seen=1
		sed -i '/^Usage:/,$d' "$errf"
	fi
	local first lines
	first=$(head -n 1 "$errf")
	lines=$(wc -l <"$errf")
	if [ $rc -ge 124 ]; then
		why="crashed, hung or was killed (exit $rc)"
	elif [ $rc -ne "$want" ]; then
		why="exit $rc, expected $want"
	elif [ "$lines" = 0 ] && [ $usage_seen = 1 ] && [ -z "$grep" ]; then
		: # the usage alone
	elif [[ "$first" != diskgeo:* ]]; then
		why="stderr does not start with 'diskgeo:'"
	elif [ "$lines" -ne 1 ]; then
		why="$lines lines on stderr, expected 1"
	elif [ -n "$grep" ] && ! grep -Eqi -- "$grep" <<<"$first"; then
		why="message does not match /$grep/"
	elif [ -e "$newpath" ]; then
		why="output file $newpath was created"
	elif [ "$(sha256sum <"$old")" != "$old_sum" ] || [ "$(stat -c %Y "$old")" != 978307200 ]; then
		why="the existing output file was modified"
		printf '{"precious": true}\n' >"$old"
		touch -d '2001-01-01 00:00:00' "$old"
	elif [ -n "$(ls -A "$out")" ]; then
		why="left files behind: $(ls -A "$out" | tr '\n' ' ')"
	fi
	local known=0 k
	for k in "${known_failures[@]}"; do [ "$k" = "$name" ] && known=1; done
	if [ -z "$why" ] && [ $known = 1 ]; then
		pass=$((pass + 1))
		printf 'XPASS %3d %s: a known failure passes now: delete it from known_failures\n' "$n" "$name"
	elif [ -z "$why" ]; then
		pass=$((pass + 1))
		printf 'ok   %3d %s\n' "$n" "$name"
	elif [ $known = 1 ]; then
		xfail=$((xfail + 1))
		printf 'XFAIL %3d %s: %s\n' "$n" "$name" "$why"
	else
		fail=$((fail + 1))
		printf 'FAIL %3d %s: %s\n' "$n" "$name" "$why"
		printf '         command: diskgeo %s\n' "${args[*]}"
		sed 's/^/         stderr: /' "$errf" | head -n 3
	fi
	rm -rf "${out:?}"/* "$out"/.[!.]* 2>/dev/null
}
usage_ok=0
warn_ok=0

# ok_case NAME -- ARGS...: a control that must succeed and write its JSON (to @NEW@), so that the
# failures around it are failures for the reason the case names.
ok_case()
{
	n=$((n + 1))
	local newpath="$out/case$n.json" args=() a rc
	local name=$1
	shift
	[ "$1" = "--" ] && shift
	for a in "$@"; do args+=("${a//@NEW@/$newpath}"); done
	timeout -k 2 10 "$dg" "${args[@]}" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
	rc=$?
	if [ $rc -eq 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$newpath" 2>/dev/null; then
		pass=$((pass + 1))
		printf 'ok   %3d %s\n' "$n" "$name"
	else
		fail=$((fail + 1))
		printf 'FAIL %3d %s: exit %d or no valid JSON\n         command: diskgeo %s\n' "$n" "$name" $rc "${args[*]}"
		sed 's/^/         stderr: /' "$tmp/stderr" | head -n 3
	fi
	rm -rf "${out:?}"/* "$out"/.[!.]* 2>/dev/null
}

skip_case()
{
	n=$((n + 1))
	skip=$((skip + 1))
	printf 'skip %3d %s: %s\n' "$n" "$1" "$2"
}

# ---- fixtures ----
printf 'x%.0s' $(seq 100) >"$tmp/tiny"	  # smaller than one logical sector
: >"$tmp/empty"
mkdir "$tmp/dir"
mkfifo "$tmp/fifo"
truncate -s 1M "$tmp/small"		  # a 1 MiB file: smaller than one default sample
truncate -s 64M "$tmp/file"		  # a usable file
truncate -s $((64 * 1048576 + 1000)) "$tmp/unaligned" # not a whole number of 4096-byte sectors
truncate -s 1000 "$tmp/s1000"		  # less than one 4096-byte sector, more than 512
install -m 600 /dev/null "$tmp/secret"
truncate -s 1M "$tmp/secret"
sim=sim:wd-red-4tb			  # a valid device for the option cases

# ---- the command line ----
usage_ok=1 run_case 1 "no command" --
warn_ok=1 usage_ok=1 run_case 1 "unknown command" --grep "frobnicate" -- frobnicate "$tmp/file"
warn_ok=1 usage_ok=1 run_case 1 "unknown option (probe)" --grep "bogus" -- probe --bogus "$tmp/file" --json @NEW@
warn_ok=1 usage_ok=1 run_case 1 "unknown option (read)" --grep "frob" -- read --frob=3 "$tmp/file" --json @OLD@
usage_ok=1 run_case 1 "unknown option (bandwidth)" --grep "nope" -- bandwidth "$sim" --nope --json @NEW@
usage_ok=1 run_case 1 "unknown option (seek)" --grep "nope" -- seek "$sim" --nope --json @NEW@
usage_ok=1 run_case 1 "unknown option (model)" --grep "nope" -- model wd-red-4tb --nope --json @NEW@
usage_ok=1 run_case 1 "unknown option (profile)" --grep "nope" -- profile "$sim" --nope --json @NEW@
usage_ok=1 run_case 1 "probe without DEVICE" -- probe --json @NEW@
warn_ok=1 usage_ok=1 run_case 1 "two DEVICEs" -- probe "$tmp/file" "$tmp/file" --json @NEW@
warn_ok=1 usage_ok=1 run_case 1 "option missing its value" -- read "$tmp/file" --json @NEW@ --qd

# ---- devices that cannot be opened or probed ----
run_case 2 "missing device" --grep "no such file" -- probe "$tmp/does-not-exist" --json @NEW@
run_case 2 "missing device (read)" --grep "no such file" -- read "$tmp/does-not-exist" --json @OLD@
run_case 2 "a directory" -- probe "$tmp/dir" --json @NEW@
run_case 2 "a character device" -- probe /dev/null --json @NEW@
run_case 2 "a fifo (must not block)" -- probe "$tmp/fifo" --json @NEW@
warn_ok=1 run_case 2 "an empty file" -- probe "$tmp/empty" --json @NEW@
warn_ok=1 run_case 2 "an empty file (read)" -- read "$tmp/empty" --json @OLD@
warn_ok=1 run_case 2 "a file smaller than a sector" --grep "sector" -- read "$tmp/tiny" --json @NEW@
warn_ok=1 run_case 1 "a file smaller than one sample" --grep "sample" -- bandwidth "$tmp/small" --sample-size 4M --json @NEW@
run_case 2 "missing built-in drive" -- probe sim:no-such-drive --json @NEW@
run_case 2 "missing drive spec file" -- probe "sim:$tmp/no-such-spec.json" --json @NEW@
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
	warn_ok=1 run_case 2 "no permission (as nobody)" --grep "permission denied" -- probe "$tmp/secret" --json @NEW@
	as=()
	if loopdev=$(losetup -f --show "$tmp/file" 2>/dev/null); then
		as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
		run_case 2 "raw block device as nobody" --grep "root" -- probe "$loopdev" --json @NEW@
		as=()
		losetup -d "$loopdev"
	else
		skip_case "raw block device as nobody" "no loop device"
	fi
elif [ "$(id -u)" != 0 ]; then
	chmod 000 "$tmp/secret"
	warn_ok=1 run_case 2 "no permission" --grep "permission denied" -- probe "$tmp/secret" --json @NEW@
	skip_case "raw block device as nobody" "needs root"
else
	skip_case "no permission (as nobody)" "setpriv missing"
	skip_case "raw block device as nobody" "setpriv missing"
fi

# ---- numbers ----
run_case 1 "qd 0" --grep "qd" -- read "$sim" --qd 0 --json @NEW@
run_case 1 "qd 100000" --grep "qd" -- read "$sim" --qd 100000 --json @OLD@
run_case 1 "qd not a number" --grep "qd" -- read "$sim" --qd many --json @NEW@
run_case 1 "qd negative" --grep "qd" -- read "$sim" --qd -4 --json @NEW@
run_case 1 "block size garbage" --grep "block" -- read "$sim" --block-size 4x --json @NEW@
run_case 1 "block size 0" --grep "block" -- read "$sim" --block-size 0 --json @NEW@
run_case 1 "block size unaligned" --grep "block" -- read "$sim" --block-size 1000 --json @NEW@
run_case 1 "offset negative" --grep "offset" -- read "$sim" --offset -4096 --json @NEW@
run_case 1 "offset overflow" --grep "offset" -- read "$sim" --offset 99999999999999999999999 --json @NEW@
run_case 1 "offset overflow by suffix" --grep "offset" -- read "$sim" --offset 17000000T --json @NEW@
run_case 1 "offset unaligned" --grep "offset" -- read "$sim" --offset 100 --json @NEW@
run_case 1 "offset beyond the device" --grep "offset" -- read "$sim" --offset 5T --json @OLD@
run_case 1 "length beyond the device" --grep "length" -- read "$sim" --offset 3T --length 1T --json @NEW@
run_case 1 "length 0" --grep "length" -- read "$sim" --length 0 --json @NEW@
warn_ok=1 run_case 1 "block size unaligned (file)" --grep "block" -- read "$tmp/file" --block-size 1000 --json @NEW@
warn_ok=1 run_case 1 "offset beyond the device (file)" --grep "offset" -- read "$tmp/file" --offset 1G --json @OLD@
warn_ok=1 run_case 1 "length beyond the device (file)" --grep "length|end" -- read "$tmp/file" --offset 32M --length 64M --json @NEW@
run_case 1 "samples 0" --grep "samples" -- bandwidth "$sim" --samples 0 --json @NEW@
run_case 1 "samples 1" --grep "samples" -- bandwidth "$sim" --samples 1 --json @NEW@
run_case 1 "samples negative" --grep "samples" -- bandwidth "$sim" --samples -10 --json @OLD@
run_case 1 "samples fraction" --grep "samples" -- bandwidth "$sim" --samples 2.5 --json @NEW@
run_case 1 "samples overflow" --grep "samples" -- bandwidth "$sim" --samples 99999999999999999999 --json @NEW@
run_case 1 "sample size 0" --grep "sample" -- bandwidth "$sim" --sample-size 0 --json @NEW@
run_case 1 "sample size garbage" --grep "sample" -- bandwidth "$sim" --sample-size 1Q --json @NEW@
run_case 1 "time budget negative" --grep "time" -- bandwidth "$sim" --time-budget -5s --json @NEW@
run_case 1 "time budget garbage" --grep "time" -- bandwidth "$sim" --time-budget soon --json @NEW@
run_case 1 "passes 0" --grep "passes" -- bandwidth "$sim" --passes 0 --json @NEW@
run_case 1 "range reversed" --grep "range" -- bandwidth "$sim" --range 2T:1T --json @NEW@
run_case 1 "range empty" --grep "range" -- bandwidth "$sim" --range 1T:1T --json @NEW@
run_case 1 "range outside the device" --grep "range" -- bandwidth "$sim" --range 5T:6T --json @OLD@
run_case 1 "range ends beyond the device" --grep "range" -- bandwidth "$sim" --range 1T:9T --json @NEW@
run_case 1 "range garbage" --grep "range" -- bandwidth "$sim" --range 1T-2T --json @NEW@
run_case 1 "range smaller than a sample" --grep "sample|range" -- bandwidth "$sim" --range 0:1M --sample-size 4M --json @NEW@
run_case 1 "seek distances 3" --grep "distances" -- seek "$sim" --distances 3 --json @NEW@
run_case 1 "seek distances 1001" --grep "distances" -- seek "$sim" --distances 1001 --json @OLD@
run_case 1 "seek samples 0" --grep "samples" -- seek "$sim" --samples 0 --json @NEW@
run_case 1 "seek block size unaligned" --grep "block" -- seek "$sim" --block-size 1000 --json @NEW@
run_case 1 "seek time budget garbage" --grep "time" -- seek "$sim" --time-budget 5x --json @NEW@
run_case 1 "seek seed garbage" --grep "seed" -- seek "$sim" --seed -1 --json @NEW@
run_case 1 "profile bandwidth budget garbage" --grep "budget" -- profile "$sim" --bandwidth-budget 1y --json @NEW@
run_case 1 "profile seek samples 0" --grep "samples" -- profile "$sim" --seek-samples 0 --json @OLD@
run_case 1 "profile range reversed" --grep "range" -- profile "$sim" --range 2T:1T --json @NEW@
run_case 1 "profile samples 1" --grep "samples" -- profile "$sim" --samples 1 --json @NEW@

# ---- output files ----
run_case 1 "--json into a missing directory" --grep "no-such-dir" -- probe "$sim" --json "$tmp/no-such-dir/out.json"
run_case 1 "--json into a missing directory (model)" --grep "no-such-dir" -- model wd-red-4tb --json "$tmp/no-such-dir/out.json"
run_case 1 "--csv into a missing directory" --grep "no-such-dir" -- bandwidth "$sim" --json @NEW@ --csv "$tmp/no-such-dir/out.csv"
run_case 1 "--json onto a directory" -- probe "$sim" --json "$tmp/dir"
run_case 1 "--csv-dir whose parent is missing (profile)" --grep "no-such-dir" -- profile "$sim" --json @NEW@ --csv-dir "$tmp/no-such-dir/csv"
run_case 1 "--json into a missing directory (profile)" --grep "no-such-dir" -- profile "$sim" --json "$tmp/no-such-dir/p.json"
# A read-only place: a read-only bind mount (root), else an immutable directory (root), else a
# directory without write permission (non-root).
ro=""
if [ "$(id -u)" = 0 ]; then
	mkdir "$tmp/ro"
	if mount --bind "$tmp/ro" "$tmp/ro" 2>/dev/null; then
		romnt="$tmp/ro"
		mount -o remount,ro,bind "$tmp/ro" 2>/dev/null && ro="$tmp/ro"
	fi
	if [ -z "$ro" ]; then
		[ -n "${romnt:-}" ] && umount "$romnt" && romnt=""
		chattr +i "$tmp/ro" 2>/dev/null && imm="$tmp/ro" && ro="$tmp/ro"
	fi
else
	mkdir -m 555 "$tmp/ro" && ro="$tmp/ro"
fi
if [ -n "$ro" ]; then
	run_case 1 "--json into a read-only place" --grep "$tmp/ro" -- probe "$sim" --json "$ro/out.json"
	run_case 1 "--json into a read-only place (bandwidth)" --grep "$tmp/ro" -- bandwidth "$sim" --json "$ro/out.json"
	run_case 1 "--csv-dir in a read-only place (profile)" --grep "$tmp/ro" -- profile "$sim" --json @NEW@ --csv-dir "$ro"
	[ -z "$(ls -A "$ro")" ] || { fail=$((fail + 1)); echo "FAIL: files left in the read-only place"; }
else
	skip_case "--json into a read-only place" "no read-only bind mount or chattr +i here"
	skip_case "--json into a read-only place (bandwidth)" "no read-only bind mount or chattr +i here"
fi

# ---- messages that name the real reason (issue 15, item 16) ----
usage_ok=1 run_case 1 "--write=yes (takes no argument)" --grep "'--write' takes no argument" -- bandwidth "$sim" --write=yes --json @NEW@
usage_ok=1 run_case 1 "--help=x (takes no argument)" --grep "'--help' takes no argument" -- bandwidth --help=x
usage_ok=1 run_case 1 "--no-refine=1 (profile)" --grep "'--no-refine' takes no argument" -- profile "$sim" --no-refine=1 --json @NEW@
run_case 1 "time budget too large" --grep "too large \(at most 18446744073 s" -- bandwidth "$sim" --time-budget 99999999999h --json @NEW@
run_case 1 "time budget too large (seek)" --grep "too large \(at most" -- seek "$sim" --time-budget 99999999999m --json @NEW@
# Run where a directory called '-' would show as a file left behind in $out.
pushd "$out" >/dev/null
run_case 1 "--csv-dir - (stdout is not a directory)" --grep "standard output is not a directory" -- profile "$sim" --json @NEW@ --csv-dir -
popd >/dev/null
warn_ok=1 run_case 1 "a file smaller than one physical sector" --grep "1000 bytes, less than one 4096-byte physical sector" -- bandwidth "$tmp/s1000" --json @NEW@
ok_case "control: a file whose size is not a multiple of 4096 is measured" -- bandwidth "$tmp/unaligned" --samples 4 --no-refine --json @NEW@
n=$((n + 1))
if grep -q "the last 1000 bytes are left out" "$tmp/stderr"; then
	pass=$((pass + 1))
	printf 'ok   %3d %s\n' "$n" "a file whose size is not a multiple of 4096: says what is left out"
else
	fail=$((fail + 1))
	printf 'FAIL %3d %s\n' "$n" "unaligned file: no line says the last 1000 bytes are left out"
fi
# A path of about 1000 bytes: the reason after it is not cut off.
long="$tmp/$(printf 'a%.0s' $(seq 250))/$(printf 'b%.0s' $(seq 250))/$(printf 'c%.0s' $(seq 250))/$(printf 'd%.0s' $(seq 250))"
run_case 2 "a 1000-byte missing path keeps its reason" --grep "d{250}: No such file or directory$" -- probe "$long" --json @NEW@
export POSIXLY_CORRECT=1
ok_case "control: POSIXLY_CORRECT=1 still takes options after DEVICE" -- bandwidth "$sim" --samples 4 --no-refine --json @NEW@
unset POSIXLY_CORRECT
if [ "$(id -u)" = 0 ] && cp "$tmp/file" "$tmp/immutable" && chattr +i "$tmp/immutable" 2>/dev/null; then
	immf="$tmp/immutable"
	warn_ok=1 run_case 2 "--write on an immutable file" --grep "immutable.*chattr -i" -- bandwidth "$tmp/immutable" --write --confirm-destroy=immutable --samples 4 --json @NEW@
	chattr -i "$immf" && immf=""
else
	skip_case "--write on an immutable file" "needs root and chattr +i"
fi

# ---- drive specs: every class of error, through `model` and through a sim: device ----
ok_case "control: the good spec loads (model)" -- model "$specs/good.json" --json @NEW@
# the drive zoo (model --random SEED): a bad seed, a seed with a drive, and a spec it writes
run_case 1 "model --random: not a seed" --grep "random" -- model --random 12x --json @NEW@
run_case 1 "model --random: negative seed" --grep "random" -- model --random -3 --json @NEW@
run_case 1 "model --random with a drive" --grep "random" -- model --random 3 wd-red-4tb --json @NEW@
ok_case "model --random writes a spec" -- model --random 42 --json @NEW@
"$dg" model --random 42 --json "$tmp/zoo42.json" >/dev/null 2>&1
ok_case "a zoo spec loads (model)" -- model "$tmp/zoo42.json" --json @NEW@
ok_case "control: the good spec loads (sim:)" -- probe "sim:$specs/good.json" --json @NEW@
for f in "$specs"/*.json; do
	base=$(basename "$f" .json)
	[ "$base" = good ] && continue
	grep=""
	case $base in
	v2-spt-*) grep="sectors_per_track" ;;
	v2-physical-*) grep="physical_sector_bytes" ;;
	v2-ncq-*) grep="ncq_depth" ;;
	v2-negative-jitter) grep="jitter_ms" ;;
	v2-busy-*) grep="background.busy_ms" ;;
	v2-look-behind-*) grep="look_behind" ;;
	unknown-key-top) grep="rmp" ;;
	unknown-key-zone) grep="sectors_per_trak" ;;
	unknown-key-newline) grep="unknown key" ;;
	unknown-key-seek) grep="avg_ms" ;;
	unknown-key-defect) grep="length" ;;
	*heads*) grep="heads" ;;
	*rpm*) grep="rpm" ;;
	*skew*) grep="skew" ;;
	overflow-geometry) grep="cylinders|capacity|sectors|geometry" ;;
	*cylinders*) grep="cylinders" ;;
	huge-*) grep="too big|sectors_per_track" ;;
	*sectors-per-track*) grep="sectors_per_track" ;;
	*zone*) grep="zone" ;;
	*head-switch*) grep="head_switch" ;;
	*read-ahead*) grep="read_ahead" ;;
	serpentine-*) grep="band" ;;
	bad-layout*) grep="layout" ;;
	bad-sector-size) grep="logical_sector_bytes" ;;
	capacity-beyond-geometry | zero-capacity) grep="capacity" ;;
	defect-*) grep="defect" ;;
	seek-*) grep="seek" ;;
	esac
	if [ -n "$grep" ]; then
		run_case 1 "spec $base (model)" --grep "$grep" -- model "$f" --json @NEW@
		run_case 1 "spec $base (sim:)" --grep "$grep" -- probe "sim:$f" --json @OLD@
	else
		run_case 1 "spec $base (model)" -- model "$f" --json @NEW@
		run_case 1 "spec $base (sim:)" -- probe "sim:$f" --json @OLD@
	fi
done

# ---- spec paths that are not regular files: refused at once, never a hang (issue 15, item 12) ----
mkfifo "$tmp/spec.fifo"
mkdir "$tmp/spec.dir"
run_case 1 "spec is a FIFO (model)" --grep "spec.fifo: a drive spec must be a regular file, not a FIFO" -- model "$tmp/spec.fifo"
run_case 1 "spec is a FIFO (sim:)" --grep "spec.fifo: a drive spec must be a regular file, not a FIFO" -- probe "sim:$tmp/spec.fifo" --json @NEW@
run_case 1 "spec is a directory (sim:DIR/)" --grep "spec.dir/: a drive spec must be a regular file, not a directory" -- probe "sim:$tmp/spec.dir/" --json @NEW@
run_case 1 "spec is a directory (model)" --grep "spec.dir: a drive spec must be a regular file, not a directory" -- model "$tmp/spec.dir"
run_case 1 "spec is a character device (sim:/dev/zero)" --grep "/dev/zero: a drive spec must be a regular file, not a character device" -- probe "sim:/dev/zero" --json @NEW@

# ---- diskgeo sweep (issue 16) ----
run_case 1 "sweep: block not a multiple of the logical sector" --grep "sweep: --rand-blocks: 1000 \(1000 bytes\) is not a multiple of the logical sector \(512 bytes\)" -- sweep "$sim" --rand-blocks 4k,1000 --json @NEW@
run_case 1 "sweep: seq block not a multiple of the logical sector" --grep "sweep: --seq-blocks: 4100 \(4100 bytes\) is not a multiple of the logical sector" -- sweep "$sim" --seq-blocks 4100 --json @NEW@
run_case 1 "sweep: QD 0" --grep "sweep: --qd '1,0': each queue depth must be a whole number in 1..256" -- sweep "$sim" --qd 1,0 --json @NEW@
run_case 1 "sweep: QD above 256" --grep "sweep: --qd '257': each queue depth must be a whole number in 1..256" -- sweep "$sim" -Q 257 --json @NEW@
run_case 1 "sweep: --write without confirmation" --grep "sweep: --write destroys data on sim:wd-red-4tb: add --confirm-destroy=NAME" -- sweep "$sim" --write --range 1G:2G --json @NEW@
run_case 1 "sweep: --write without --range" --grep "sweep: --write needs a scratch range named with --range START:END; nothing was written" -- sweep "$sim" --write --confirm-destroy=wd-red-4tb --json @NEW@
run_case 1 "sweep: --write naming another device" --grep "sweep: --confirm-destroy='sdz' does not name sim:wd-red-4tb" -- sweep "$sim" --write --confirm-destroy=sdz --range 1G:2G --json @NEW@
run_case 1 "sweep: range smaller than the largest block" --grep "sweep: the range \(8388608 bytes\) is smaller than the largest block allows" -- sweep "$sim" --range 1G:1032M --json @NEW@
run_case 1 "sweep: --confirm-destroy without --write" --grep "sweep: --confirm-destroy goes with --write only" -- sweep "$sim" --confirm-destroy=wd-red-4tb --json @NEW@
run_case 1 "sweep: zero time budget" --grep "sweep: --time-budget" -- sweep "$sim" --time-budget 0 --json @NEW@

echo "badinput: $n cases: $pass passed, $fail failed, $xfail known failures, $skip skipped"
[ $fail -eq 0 ]
