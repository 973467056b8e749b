#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs each libFuzzer target for a bounded time over its committed seed corpus and fails on the
# first crash, leak, sanitizer report or broken contract (the targets abort() on those).
#
# Usage: fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]     (default 60)
# Example: CC=clang cmake -S . -B build-fuzz -DDISKGEO_FUZZ=ON -DBUILD_TESTING=OFF &&
#          cmake --build build-fuzz --target fuzz_parse fuzz_spec fuzz_profile && fuzz/run.sh build-fuzz 60
# New inputs go to a scratch directory, never into the committed corpus; a crashing input is
# kept as BUILD_DIR/fuzz/crash-* and printed (base64) so a CI log is enough to reproduce it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]}
secs=${2:-60}
status=0
for target in fuzz_parse fuzz_spec fuzz_profile; do
	bin="$build/fuzz/$target"
	[ -x "$bin" ] || { echo "fuzz/run.sh: $bin not built" >&2; exit 1; }
	scratch=$(mktemp -d)
	dict=()
	[ -f "$here/$target.dict" ] && dict=(-dict="$here/$target.dict")
	log="$build/fuzz/$target.log"
	echo "== $target: ${secs}s"
	# fuzz_spec: inputs up to 128 KiB (1024 zones, a few thousand defects: the spec limits'
	# cost paths), and every input must finish within the time limit (a slow one fails the
	# run as a timeout-* artifact, like a crash): the limits keep the worst accepted spec near
	# 1.5 s of CPU here under the sanitizers, which cost about 30x on the truth's loops.
	limits=(-timeout=10)
	[ "$target" = fuzz_spec ] && limits=(-timeout=10 -max_len=131072)
	if "$bin" -max_total_time="$secs" "${limits[@]}" -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$build/fuzz/" "${dict[@]}" "$scratch" "$here/corpus/$target" \
		>"$log" 2>&1; then
		grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|#[0-9]+.*DONE)' "$log" || true
	else
		status=1
		tail -n 60 "$log"
		for c in "$build/fuzz/"crash-* "$build/fuzz/"leak-* "$build/fuzz/"timeout-* "$build/fuzz/"oom-*; do
			[ -f "$c" ] && { echo "input $c (base64):"; base64 "$c"; }
		done
	fi
	rm -rf "$scratch"
done
exit $status
