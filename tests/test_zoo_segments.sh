#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 13's "methods that survive any cache", on diskgeo's cache_segments extension: zoo drives
# (`model --random SEED`) given a cache of 8 and of 32 segments, which keep the streams the drive
# left and serve a later read inside one at the link's rate, whatever moved the head since. The
# default `diskgeo profile` is judged by bench/zoo against the truth: every bandwidth sample
# within 3% of the truth of its own bytes and their median within 1%, rpm, track-to-track,
# average and full stroke, span IOPS, <= 180 s of device time.
# Before the pilot's samples became the curve's and re-read samples were checked for cache
# service (bandwidth_cache.c), 14, 27 and 71 (8 segments) and 53, 69, 71 and 73 (32) read samples
# 26% to 779% fast; before the full stroke's attempts moved to places never read (seek.c), 65 and
# 89 read a full stroke of 0 ms; 93 (8) measured its longest distance as a cache hit.
# Under the sanitizers (a second argument "san") two drives of each: they are ten times slower.
#
# Usage: tests/test_zoo_segments.sh DISKGEO_BINARY [san|full] [BANDWIDTH_MEASURE_BINARY]
set -u
dg=$(readlink -f "${1:?usage: test_zoo_segments.sh DISKGEO_BINARY [san]}")
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d /tmp/diskgeo-zooseg-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
ln -s "$dg" "$tmp/bin/diskgeo"
[ -n "${3:-}" ] && export DISKGEO_BANDWIDTH_MEASURE=$(readlink -f "$3")

seeds8=14,27,71,65,89,100,93
seeds32=53,69,73,71,65,89
if [ "${2:-}" = san ]; then
	seeds8=14,65
	seeds32=69,89
fi
check=bwmax,bw,full,avg,span,rpm,t2t,time
rc=0
"$py" "$src/bench/zoo" --build "$tmp/bin" --set cache_segments=8 --seeds "$seeds8" \
	--check "$check" || rc=1
"$py" "$src/bench/zoo" --build "$tmp/bin" --set cache_segments=32 --seeds "$seeds32" \
	--check "$check" || rc=1
exit $rc
