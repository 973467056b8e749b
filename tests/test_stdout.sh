#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Standard output is checked when diskgeo exits, on every path (util-linux's close_stdout): with
# stdout on /dev/full (every write fails with ENOSPC) each command that prints ends with exit 1
# and exactly one line "diskgeo: ...No space left on device" on stderr, whether its output fits
# the stdio buffer (the error shows at the final flush) or not (at an earlier write); a run that
# fails for its own reason keeps its status and its line; the same commands into a file exit 0
# with nothing on stderr; a closed pipe (SIGPIPE ignored) exits 1 without a line.
#
#   test_stdout.sh DISKGEO
set -u
DG=${1:?usage: test_stdout.sh DISKGEO}
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0 cases=0

# full WANT_RC NEEDLE ARGS...: diskgeo ARGS >/dev/full exits WANT_RC with one line holding NEEDLE
full() {
	local want=$1 needle=$2 rc
	shift 2
	cases=$((cases + 1))
	"$DG" "$@" >/dev/full 2>"$T/err"
	rc=$?
	if [ "$rc" != "$want" ] || [ "$(wc -l <"$T/err")" != 1 ] ||
		! grep -q "^diskgeo: .*$needle" "$T/err"; then
		echo "FAIL: diskgeo $* >/dev/full: exit $rc (want $want), stderr: $(head -c 300 "$T/err")"
		fails=$((fails + 1))
	fi
}

# ok ARGS...: into a file, exit 0 and a quiet stderr
ok() {
	cases=$((cases + 1))
	if ! "$DG" "$@" >"$T/out" 2>"$T/err" || [ -s "$T/err" ] || [ ! -s "$T/out" ]; then
		echo "FAIL: diskgeo $* >file: exit $?, stderr: $(head -c 300 "$T/err")"
		fails=$((fails + 1))
	fi
}

nospc="write error on standard output: No space left on device"
for args in "--help" "--version" "probe sim:hgst-7k1000" "model --list" "model exos-x16-16tb" \
	"read sim:hgst-7k1000 --length 4M"; do
	# shellcheck disable=SC2086
	full 1 "$nospc" $args
	# shellcheck disable=SC2086
	ok $args
done
# bigger than the stdio buffer: the first write fails, not only the last flush
[ "$("$DG" model exos-x16-16tb | wc -c)" -gt 8192 ] || {
	echo "FAIL: diskgeo model's text is no longer larger than the stdio buffer"
	fails=$((fails + 1))
}
# --json - reports its own failed write, once
full 1 "standard output: No space left on device" probe sim:hgst-7k1000 --json -
# a failure of its own keeps its status and its line
full 2 "unknown drive 'nosuch'" probe sim:nosuch
full 1 "unknown option '--bogus'" probe sim:hgst-7k1000 --bogus
# a closed pipe (its reader gone before the first write): no line, but not a success
cases=$((cases + 1))
{
	trap '' PIPE
	sleep 0.5
	"$DG" model hgst-7k1000 2>"$T/err"
	echo $? >"$T/rc"
} | true
rc=$(cat "$T/rc")
if [ "$rc" != 1 ] || [ -s "$T/err" ]; then
	echo "FAIL: diskgeo model into a closed pipe, SIGPIPE ignored: exit $rc, stderr: $(head -c 300 "$T/err")"
	fails=$((fails + 1))
fi
echo "test_stdout: $cases cases, $fails failures"
[ $fails = 0 ]
