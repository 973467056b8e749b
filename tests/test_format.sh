#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every tracked C file is formatted as .clang-format says (the check .ci/run makes), and the
# check can fail: a misformatted copy of a source file is refused (the negative control).
# 77 (skipped) without clang-format or outside a git checkout.
#
#   test_format.sh SOURCE_DIR
set -u
SRC=${1:?usage: test_format.sh SOURCE_DIR}
cd "$SRC" || exit 1
command -v clang-format >/dev/null || { echo "test_format: no clang-format; skipped"; exit 77; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "test_format: not a git checkout; skipped"; exit 77; }
T=$(mktemp -d "$SRC/.format.XXXXXX") || exit 1 # inside the tree: the same .clang-format applies
trap 'rm -rf "$T"' EXIT INT TERM
fails=0

if ! git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run -Werror 2>"$T/report"; then
	echo "FAIL: not formatted (clang-format -i FILE):"
	grep -E '^[^ ].*: error:' "$T/report" | cut -d: -f1 | sort -u | sed 's/^/    /'
	fails=1
fi
# the negative control: src/core/util.c with its indentation flattened
sed 's/^\t//' src/core/util.c >"$T/bad.c"
if clang-format --dry-run -Werror "$T/bad.c" 2>/dev/null; then
	echo "FAIL: clang-format accepted a misformatted file"
	fails=1
fi
echo "test_format: $(git ls-files '*.c' '*.h' | wc -l) files checked, $fails failures"
exit $fails
