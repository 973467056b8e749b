#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Allocation failures (jansson's test_chaos idea): diskgeo-chaos (tests/chaos/chaos_alloc.c) is
# diskgeo with every allocation of its own and of jansson able to fail. Each command below runs
# once counting its allocations and noting each one's call site; then it runs again failing the
# n-th allocation, for the first n of every call site (so each failure site is hit at least once;
# with DG_CHAOS_ALL=1 for every n). Every run must end with a documented exit code (0-4, or the
# status of the run without failures: compare's 5), a nonzero one with a "diskgeo: " line on
# stderr, and no crash or sanitizer report (under the ASan/UBSan build also no leak); a run that
# ends with the status of the run without failures must have written the same JSON document
# (run.started_at and run.elapsed_s aside): no part silently dropped.
#
#   test_chaos.sh DISKGEO_CHAOS
set -u
CHAOS=$(readlink -f "${1:?usage: test_chaos.sh DISKGEO_CHAOS}")
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
export ASAN_OPTIONS=detect_leaks=1:exitcode=99:abort_on_error=0
export LSAN_OPTIONS=exitcode=99
export UBSAN_OPTIONS=halt_on_error=1:exitcode=99:print_stacktrace=1
fails=0 runs=0

# same A B: the two JSON documents are equal but for run.started_at and run.elapsed_s
same() {
	python3 - "$1" "$2" <<'PY'
import json, sys
def load(p):
    d = json.load(open(p))
    for k in ("started_at", "elapsed_s"):
        d.get("run", {}).pop(k, None)
    return d
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) else 1)
PY
}

# parser_sites: the call sites (of $T/sites) that are a call to one of jansson's json_load*().
# jansson 2.14's lexer mishandles its own allocation failures: it ignores a failed growth of
# its token buffer (load.c, lex_save: a shorter string, no error) and can free a string twice
# or assert (lex_scan_string) when a later one fails. diskgeo cannot see or avoid that, so a
# parse is failed only at its first allocation (diskgeo must handle json_load*() returning
# NULL), and a document that then differs is not held against diskgeo.
parser_sites() {
	local a where
	sort -u "$T/sites" | while read -r a; do
		where=$(addr2line -e "$CHAOS" "0x$a" 2>/dev/null | cut -d' ' -f1)
		[ -r "${where%:*}" ] && sed -n "${where##*:}p" "${where%:*}" | grep -q 'json_load' &&
			echo "$a"
	done
}

# in_parser N: allocation N was made inside a json_load*() call
in_parser() {
	grep -qx "$(sed -n "${1}p" "$T/sites")" "$T/parser"
}

# one LABEL JSON ARGS...: the command's allocation-failure runs; ARGS write the document JSON
one() {
	local label=$1 json=$2 n rc site base_rc
	shift 2
	DG_CHAOS_SITES=$T/sites "$CHAOS" "$@" >/dev/null 2>"$T/err"
	base_rc=$?
	if [ $base_rc != 0 ] && [ $base_rc != 5 ]; then
		echo "FAIL $label: exit $base_rc without injected failures: $(head -n 3 "$T/err")"
		fails=$((fails + 1))
		return
	fi
	cp "$json" "$T/baseline.json"
	parser_sites >"$T/parser"
	if [ "${DG_CHAOS_ALL:-0}" = 1 ]; then
		awk 'FILENAME == ARGV[1] { p[$1] = 1; next } !($1 in p) || !seen[$1]++ { print FNR }' \
			"$T/parser" "$T/sites" >"$T/points"
	else
		awk '!seen[$1]++ { print NR }' "$T/sites" >"$T/points"
	fi
	echo "$label: $(wc -l <"$T/sites") allocations, $(sort -u "$T/sites" | wc -l) call sites, $(wc -l <"$T/points") runs"
	while read -r n; do
		runs=$((runs + 1))
		rm -f "$json"
		DG_CHAOS_FAIL=$n "$CHAOS" "$@" >/dev/null 2>"$T/err"
		rc=$?
		why=""
		if [ $rc -gt 4 ] && [ $rc != $base_rc ]; then
			why="exit $rc"
		elif grep -qE 'Sanitizer|runtime error:' "$T/err"; then
			why="sanitizer report"
		elif [ $rc != 0 ] && [ $rc != $base_rc ] && ! grep -q '^diskgeo: ' "$T/err"; then
			why="exit $rc without a 'diskgeo: ' line"
		elif [ $rc = $base_rc ] && ! same "$json" "$T/baseline.json" && ! in_parser "$n"; then
			why="exit $rc, but not the document of the run without failures"
		fi
		if [ -n "$why" ]; then
			site=$(sed -n "${n}p" "$T/sites")
			echo "FAIL $label: allocation $n failing ($(addr2line -f -C -e "$CHAOS" "0x$site" 2>/dev/null | tr '\n' ' ')): $why"
			grep -m 4 -E 'ERROR|#[0-4] |runtime error|^diskgeo' "$T/err" | sed 's/^/    /'
			fails=$((fails + 1))
		fi
	done <"$T/points"
}

cd "$T" || exit 1
one "profile" "$T/p.json" profile sim:hgst-7k1000 -n 8 -s 1M --distances 4 --seek-samples 2 \
	--json "$T/p.json" --csv-dir "$T/csv"
one "model --json" "$T/m.json" model hgst-7k1000 --json "$T/m.json"
one "model --random" "$T/z.json" model --random 3 --json "$T/z.json"
one "read" "$T/r.json" read sim:hgst-7k1000 --length 4M --block-size 1M --json "$T/r.json"
one "read --random" "$T/rr.json" read sim:wd-red-4tb --random --length 256k --json "$T/rr.json"
one "probe" "$T/pr.json" probe sim:hgst-7k1000 --json "$T/pr.json"
# the profile readers: a second profile of the same drive (another seed) against the first
for seed in 1 2; do
	"$CHAOS" profile sim:hgst-7k1000 -n 8 -s 1M --distances 4 --seek-samples 2 --seed $seed \
		--json "$T/p$seed.json" >/dev/null 2>&1
done
one "compare" "$T/c.json" compare "$T/p1.json" "$T/p2.json" --json "$T/c.json"
echo "test_chaos: $runs runs, $fails failures"
[ $fails = 0 ]
