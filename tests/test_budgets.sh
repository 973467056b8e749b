#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Budgets, bounded memory and "nothing measured" (issue 15, items 9 and 10), at the command line:
#   - seek --time-budget 1s is refused before any read (exit 1) with the minimum it needs;
#   - a small budget that passes is honoured: fewer distances with a warning, the curve's device
#     time (seek.curve_device_time_s) within the budget, no point without samples (no NaN);
#   - a spec with a 64 GiB cache and a 32 GiB read-ahead runs in bounded memory (max RSS);
#   - bandwidth on a 1 MiB file is exit 2 with the reason, and writes no profile;
#   - a file truncated during a run: exit 3, errors[] capped at 100 with errors_total counting
#     them all, and a run whose reads keep failing (read, seek, bandwidth) stops with a warning.
# No root needed: sim: drives and sparse regular files.
#
# Usage: tests/test_budgets.sh DISKGEO_BINARY SOURCE_DIR
set -u
dg=$(readlink -f "${1:?usage: test_budgets.sh DISKGEO_BINARY SOURCE_DIR}")
src=$(readlink -f "${2:?usage: test_budgets.sh DISKGEO_BINARY SOURCE_DIR}")
tmp=$(mktemp -d /tmp/diskgeo-budgets.XXXXXX)
bg=""
cleanup()
{
	[ -n "$bg" ] && kill "$bg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
cases=0

# result LABEL WHY: WHY empty = ok.
result()
{
	cases=$((cases + 1))
	if [ -n "$2" ]; then
		echo "FAIL $1: $2"
		sed 's/^/    stderr: /' "$tmp/err" | head -n 6
		fail=$((fail + 1))
	else
		echo "ok   $1"
	fi
}

# json_check FILE PYTHON: runs PYTHON with `d` the parsed FILE; prints the failed assertion.
json_check()
{
	python3 -c "
import json, math, sys
d = json.load(open(sys.argv[1]))
$2
" "$1" 2>&1 | tail -n 1
}

# 1. A budget below the smallest curve: refused up front, one line naming the minimum.
rc=0
"$dg" seek sim:wd-red-4tb --time-budget 1s --json "$tmp/s1.json" >/dev/null 2>"$tmp/err" || rc=$?
why=""
if [ $rc -ne 1 ]; then
	why="exit $rc, expected 1"
elif ! grep -q '^diskgeo: seek: a time budget of 1 s cannot hold the smallest seek curve .*needs at least 2.7 s$' "$tmp/err"; then
	why="no line naming the minimum (2.7 s)"
elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
	why="more than one line on stderr"
elif [ -e "$tmp/s1.json" ]; then
	why="a profile was written"
fi
result "seek --time-budget 1s refused with the minimum" "$why"

# 2. A small budget that passes: honoured with fewer distances, within the budget, no NaN.
rc=0
"$dg" seek sim:wd-red-4tb --time-budget 3s --json "$tmp/s3.json" >/dev/null 2>"$tmp/err" || rc=$?
why=""
if [ $rc -ne 0 ]; then
	why="exit $rc, expected 0"
elif ! grep -q '^diskgeo: warning: the seek time budget (3.0 s) held [0-9]* of the 24 distances' "$tmp/err"; then
	why="no warning that fewer distances were measured"
elif grep -qi nan "$tmp/s3.json"; then
	why="NaN in the profile"
else
	why=$(json_check "$tmp/s3.json" "
s = d['seek']
assert s['curve_device_time_s'] <= 3.0, 'curve took %.2f s of a 3 s budget' % s['curve_device_time_s']
assert 4 <= len(s['points']) < 40, '%d points' % len(s['points'])
assert all(p['samples'] > 0 and math.isfinite(p['seek_ms']) for p in s['points']), 'a point without samples'
assert abs(s['average_ms'] / 11.787 - 1) < 0.05, 'average %.3f ms, truth 11.787' % s['average_ms']
")
fi
result "seek --time-budget 3s honoured with fewer distances" "$why"

# 3. A spec with a huge cache and read-ahead: memory bounded (the plan once asked for 32 GiB).
python3 - "$src/presets/wd-red-4tb.json" "$tmp/hugecache.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["cache_bytes"] = 64 << 30
d["read_ahead_bytes"] = 32 << 30
json.dump(d, open(sys.argv[2], "w"))
EOF
# An address-space limit turns an oversized calloc (lazily mapped, so not in the RSS) into a
# failure; AddressSanitizer's shadow memory needs far more, so it runs without.
limit=unlimited
ldd "$dg" 2>/dev/null | grep -q libasan || limit=4194304
rc=0
(ulimit -v $limit && exec /usr/bin/time -f '%M' -o "$tmp/rss" "$dg" seek "sim:$tmp/hugecache.json" \
	--time-budget 3s --no-spans --json "$tmp/hc.json") >/dev/null 2>"$tmp/err" || rc=$?
why=""
rss=$(tail -n 1 "$tmp/rss")
if [ $rc -ne 0 ]; then
	why="exit $rc, expected 0"
elif [ "$rss" -gt 65536 ]; then
	why="max RSS $rss kB, more than 64 MiB"
elif grep -qi nan "$tmp/hc.json"; then
	why="NaN in the profile"
fi
result "seek on a 64 GiB-cache spec in bounded memory (max RSS ${rss:-?} kB)" "$why"

# 4. Nothing measured is not success: a 1 MiB file is too small for a bandwidth curve.
truncate -s 1M "$tmp/one.img"
rc=0
"$dg" bandwidth "$tmp/one.img" --json "$tmp/bw.json" >/dev/null 2>"$tmp/err" || rc=$?
why=""
if [ $rc -ne 2 ]; then
	why="exit $rc, expected 2"
elif ! grep -q "^diskgeo: bandwidth: .*one.img is too small to measure: its 1048576 bytes" "$tmp/err"; then
	why="no line saying the device is too small"
elif [ -e "$tmp/bw.json" ]; then
	why="a profile was written"
fi
result "bandwidth on a 1 MiB file: exit 2, too small to measure" "$why"

# cut_after_32m PID FILE SIZE: truncate FILE to SIZE once process PID has read 32 MiB (its /proc io
# counter counts psync's preads; io_uring's reads do not show there), or once it has ended.
cut_after_32m() {
	local rchar
	for _ in $(seq 1000); do
		rchar=$(awk '/^rchar:/ { print $2 }' "/proc/$1/io" 2>/dev/null || true)
		[ "${rchar:-0}" -ge 33554432 ] && break
		kill -0 "$1" 2>/dev/null || break
		sleep 0.01
	done
	truncate -s "$3" "$2"
}

# 5. A file truncated to half during random reads: errors[] capped, errors_total counts all.
# The file is cut once the run has read 32 MiB, not after a fixed sleep: on an idle machine
# io_uring read 2 GiB of 4k blocks of a sparse file in 0.3 s, before the cut (exit 0).
truncate -s 8G "$tmp/half.img"
"$dg" read "$tmp/half.img" --random --length 512M --block-size 4k --engine psync --json "$tmp/rd.json" >/dev/null 2>"$tmp/err" &
bg=$!
cut_after_32m "$bg" "$tmp/half.img" 4G
rc=0
wait "$bg" || rc=$?
bg=""
why=""
if [ $rc -ne 3 ]; then
	why="exit $rc, expected 3"
elif ! grep -q '^diskgeo: [0-9]* I/O error ranges' "$tmp/err"; then
	why="no line counting the errors"
else
	why=$(json_check "$tmp/rd.json" "
assert len(d['errors']) == 100, '%d errors listed' % len(d['errors'])
assert d['errors_total'] > 1000, 'errors_total %d' % d['errors_total']
assert not any('in a row' in w for w in d['warnings']), 'stopped although half the reads work'
")
fi
result "read of a file truncated to half: errors[] capped at 100, errors_total" "$why"

# 6. A file truncated mid-seek (issue 15: 163,111 errors[] entries): the run stops once its
# reads keep failing.
truncate -s 8G "$tmp/trunc.img"
(sleep 0.5 && truncate -s 100M "$tmp/trunc.img") &
bg=$!
rc=0
"$dg" seek "$tmp/trunc.img" --distances 1000 --samples 10000 --time-budget 600s \
	--json "$tmp/tr.json" >/dev/null 2>"$tmp/err" || rc=$?
wait "$bg"
bg=""
why=""
if [ $rc -ne 3 ]; then
	why="exit $rc, expected 3"
elif ! grep -q '^diskgeo: warning: 64 reads in a row failed: the seek run stopped there' "$tmp/err"; then
	why="no warning that the failing run stopped"
else
	why=$(json_check "$tmp/tr.json" "
assert 1 <= len(d['errors']) <= 100, '%d errors listed' % len(d['errors'])
assert d['errors_total'] >= len(d['errors']), 'errors_total'
")
fi
result "seek of a file truncated mid-run: stops, errors capped" "$why"

# 7. The same for read: reads past the new end come back empty; 64 in a row end the run.
truncate -s 8G "$tmp/trunc2.img"
"$dg" read "$tmp/trunc2.img" --random --length 4G --block-size 4k --engine psync --json "$tmp/rt.json" >/dev/null 2>"$tmp/err" &
bg=$!
cut_after_32m "$bg" "$tmp/trunc2.img" 100M
rc=0
wait "$bg" || rc=$?
bg=""
why=""
if [ $rc -ne 3 ]; then
	why="exit $rc, expected 3"
elif ! grep -q '^diskgeo: warning: read: 64 reads in a row failed or came back short' "$tmp/err"; then
	why="no warning that the failing run stopped"
else
	why=$(json_check "$tmp/rt.json" "
assert len(d['errors']) <= 100 and d['errors_total'] >= len(d['errors']), 'errors'
assert d['read']['ios'] < 1 << 20, 'read on: %d reads' % d['read']['ios']
")
fi
result "read of a file truncated mid-run: stops after 64 short reads" "$why"

# 8. And for bandwidth: 8 samples in a row whose reads fail end the curve.
truncate -s 64G "$tmp/trunc3.img"
(sleep 0.5 && truncate -s 100M "$tmp/trunc3.img") &
bg=$!
rc=0
"$dg" bandwidth "$tmp/trunc3.img" --samples 4000 --sample-size 16M --json "$tmp/bt.json" >/dev/null 2>"$tmp/err" || rc=$?
wait "$bg"
bg=""
why=""
if [ $rc -ne 3 ]; then
	why="exit $rc, expected 3"
elif ! grep -q '^diskgeo: warning: the reads of 8 samples in a row failed: the curve stopped there' "$tmp/err"; then
	why="no warning that the failing curve stopped"
else
	why=$(json_check "$tmp/bt.json" "
assert 1 <= len(d['errors']) <= 100 and d['errors_total'] <= 64, 'errors_total %d' % d['errors_total']
")
fi
result "bandwidth of a file truncated mid-run: stops after 8 failed samples" "$why"

echo "test_budgets: $cases cases, $fail failures"
[ $fail -eq 0 ]
