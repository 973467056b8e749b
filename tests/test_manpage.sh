#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The man pages document every option the programs offer, and groff has nothing to say about
# them.
#
#   test_manpage.sh DISKGEO SOURCE_DIR [DISKGEO_SIMDISK] [PYTHON]
#
# - For every command that `diskgeo --help` lists: every long option in `diskgeo CMD --help`
#   appears in man/diskgeo.8 inside that command's subsection of OPTIONS (".SS CMD"), and the
#   command has an entry under COMMANDS. The top-level --help/--version appear in the page.
# - Every long option, subcommand and environment variable in `diskgeo-simdisk --help` appears in
#   man/diskgeo-simdisk.8 (when DISKGEO_SIMDISK is given and built).
# - Every long option in `diskgeo-plot --help` (run under PYTHON, default /usr/bin/python3)
#   appears in man/diskgeo-plot.1.
# - `groff -ww -z -man` prints nothing for every page in man/.
# A negative control proves that the checker reports an option that is not in a page.
# Exit 0 when all hold, 1 otherwise (each miss is named on stderr).
set -u

DISKGEO=${1:?usage: test_manpage.sh DISKGEO SOURCE_DIR [DISKGEO_SIMDISK] [PYTHON]}
SRC=${2:?usage: test_manpage.sh DISKGEO SOURCE_DIR [DISKGEO_SIMDISK] [PYTHON]}
SIMDISK=${3:-}
PYTHON=${4:-/usr/bin/python3}
MAN=$SRC/man
fails=0
checked=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Standard input's roff with its escapes undone: \- -> -, fonts dropped, \(dq -> ", \& \| dropped.
plain() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\(dq/"/g' \
	    -e 's/\\&//g' -e 's/\\|//g' -e 's/\\e/\\/g'
}

# The lines of one ".SS NAME" subsection of ".SH OPTIONS" (until the next .SS or .SH).
options_section() {
	awk -v want="$2" '
		/^\.SH/ { in_opts = ($0 ~ /^\.SH +"?OPTIONS"?$/); in_sec = 0; next }
		/^\.SS/ { name = $0; sub(/^\.SS +/, "", name); gsub(/"/, "", name);
			  in_sec = in_opts && name == want; next }
		in_sec { print }' "$1"
}

# The long options a --help text names: --word, --word-word (an "=value" tail is dropped).
long_options() {
	grep -oE -- '--[a-z][a-z0-9]*(-[a-z0-9]+)*' "$1" | sort -u
}

# has_option FILE OPTION: OPTION occurs in FILE as a whole option name.
has_option() {
	grep -qE -- "$2([^a-z0-9-]|\$)" "$1"
}

# check_options HELP_FILE TEXT_FILE WHAT: every long option of HELP_FILE is in TEXT_FILE.
check_options() {
	n=0
	for opt in $(long_options "$1"); do
		n=$((n + 1))
		checked=$((checked + 1))
		has_option "$2" "$opt" || fail "$3: $opt is not documented"
	done
	[ "$n" -gt 0 ] || fail "$3: no long option found in its --help (is the help empty?)"
}

# ---- diskgeo(8) ----
page=$MAN/diskgeo.8
[ -f "$page" ] || { echo "FAIL: $page is missing" >&2; exit 1; }
plain <"$page" >"$tmp/diskgeo.txt"

"$DISKGEO" --help >"$tmp/top.help" 2>&1 || fail "diskgeo --help exited $?"
# Commands are the lines "  NAME  summary" after "Commands:".
commands=$(awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' \
	"$tmp/top.help")
[ -n "$commands" ] || fail "diskgeo --help lists no command"
for opt in --help --version; do
	checked=$((checked + 1))
	has_option "$tmp/diskgeo.txt" "$opt" || fail "diskgeo: $opt is not documented"
done

options_section "$page" "Common options" | plain >"$tmp/common.sec"
ncmd=0
for cmd in $commands; do
	ncmd=$((ncmd + 1))
	"$DISKGEO" "$cmd" --help >"$tmp/$cmd.help" 2>&1 || fail "diskgeo $cmd --help exited $?"
	# An entry under COMMANDS: ".B cmd" somewhere after ".SH COMMANDS" and before OPTIONS.
	awk -v c="$cmd" '/^\.SH/ { on = ($0 ~ /COMMANDS/) } on && $0 == ".B " c { found = 1 }
		END { exit !found }' "$page" || fail "diskgeo.8: no entry for '$cmd' under COMMANDS"
	options_section "$page" "$cmd" | plain >"$tmp/$cmd.sec"
	if [ ! -s "$tmp/$cmd.sec" ]; then
		fail "diskgeo.8: OPTIONS has no '.SS $cmd' subsection"
		continue
	fi
	# Options that every command shares may be documented once, under "Common options".
	cat "$tmp/common.sec" >>"$tmp/$cmd.sec"
	check_options "$tmp/$cmd.help" "$tmp/$cmd.sec" "diskgeo.8, OPTIONS/$cmd"
done
echo "diskgeo.8: $ncmd commands ($(echo $commands)) checked"

# Negative control: an option no page has must be reported.
printf '  --no-such-option-xyzzy  nothing\n' >"$tmp/fake.help"
before=$fails
check_options "$tmp/fake.help" "$tmp/diskgeo.txt" "negative control" 2>/dev/null
if [ "$fails" -eq "$before" ]; then
	fail "the checker did not notice an undocumented option"
else
	fails=$before
fi

# ---- diskgeo-simdisk(8) ----
if [ -n "$SIMDISK" ] && [ -x "$SIMDISK" ]; then
	spage=$MAN/diskgeo-simdisk.8
	if [ ! -f "$spage" ]; then
		fail "$spage is missing"
	else
		plain <"$spage" >"$tmp/simdisk.txt"
		"$SIMDISK" --help >"$tmp/simdisk.help" 2>&1 || fail "diskgeo-simdisk --help exited $?"
		check_options "$tmp/simdisk.help" "$tmp/simdisk.txt" "diskgeo-simdisk.8"
		# Subcommands: the "  NAME   text" lines of the help; each needs a .TP entry.
		for sub in $(awk '/^  [a-z]+   / { print $1 }' "$tmp/simdisk.help"); do
			checked=$((checked + 1))
			grep -qE "^\.BI? $sub( |\$)" "$spage" ||
				fail "diskgeo-simdisk.8: no entry for subcommand '$sub'"
		done
		for var in $(grep -oE 'DISKGEO_[A-Z_]+' "$tmp/simdisk.help" | sort -u); do
			checked=$((checked + 1))
			awk -v v="$var" '/^\.SH/ { on = ($0 ~ /ENVIRONMENT/) } on && index($0, v) { f = 1 }
				END { exit !f }' "$spage" ||
				fail "diskgeo-simdisk.8: $var is not under ENVIRONMENT"
		done
	fi
else
	echo "diskgeo-simdisk not built: its page is only checked by groff"
fi

# ---- diskgeo-plot(1) ----
ppage=$MAN/diskgeo-plot.1
if [ ! -f "$ppage" ]; then
	fail "$ppage is missing"
elif [ -x "$PYTHON" ]; then
	plain <"$ppage" >"$tmp/plot.txt"
	"$PYTHON" "$SRC/tools/diskgeo-plot" --help >"$tmp/plot.help" 2>&1 ||
		fail "diskgeo-plot --help exited $?"
	check_options "$tmp/plot.help" "$tmp/plot.txt" "diskgeo-plot.1"
else
	echo "$PYTHON not found: diskgeo-plot's options not checked"
fi

# ---- groff finds nothing to warn about ----
npages=0
for p in "$MAN"/*.[1-8]; do
	[ -f "$p" ] || continue
	npages=$((npages + 1))
	out=$(groff -ww -z -man "$p" 2>&1)
	[ -z "$out" ] || fail "groff -ww -z -man $(basename "$p"): $out"
done
[ "$npages" -ge 3 ] || fail "expected at least 3 pages in $MAN, found $npages"

echo "$checked options/entries checked, $npages pages through groff, $fails failures"
[ "$fails" -eq 0 ]
