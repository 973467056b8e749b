#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The bash completion (completion/diskgeo.bash) completes commands, each command's options,
# option values, built-in drive names, sim:NAME devices and block devices, for diskgeo and
# diskgeo-simdisk; with and without the bash-completion package's helpers loaded.
#
#   test_completion.sh DISKGEO SOURCE_DIR
#
# Exit 0 when every completion holds, 1 otherwise (each miss named on stderr).
set -u
DISKGEO=${1:?usage: test_completion.sh DISKGEO SOURCE_DIR}
SRC=${2:?usage: test_completion.sh DISKGEO SOURCE_DIR}
fails=0
checks=0

# complete FUNCTION WORD...: COMPREPLY for the command line WORD... (the last word is the one
# being completed), one per line in $out
complete_line() {
	local fn=$1
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$fn" 2>/dev/null
	out=$(printf '%s\n' "${COMPREPLY[@]}" | sort -u)
}

# expect WHAT WANT FUNCTION WORD...: WANT (a newline-separated list) is among the completions
expect() {
	local what=$1 want=$2
	shift 2
	complete_line "$@"
	checks=$((checks + 1))
	while IFS= read -r w; do
		if ! grep -qxF -- "$w" <<<"$out"; then
			echo "FAIL: $what: '$w' not among: $(echo $out)" >&2
			fails=$((fails + 1))
			return
		fi
	done <<<"$want"
	echo "ok: $what"
}
# exactly WHAT WANT FUNCTION WORD...: the completions are exactly WANT
exactly() {
	local what=$1 want=$2
	shift 2
	complete_line "$@"
	checks=$((checks + 1))
	if [ "$out" = "$(sort -u <<<"$want")" ]; then
		echo "ok: $what"
	else
		echo "FAIL: $what: got: $(echo $out), want: $(echo $want)" >&2
		fails=$((fails + 1))
	fi
}

run_all() {
	local tag=$1 dev
	exactly "$tag: commands" "$(printf 'probe\nprofile')" _diskgeo "$DISKGEO" pr
	expect "$tag: profile's --no-* options" "$(printf -- '--no-bandwidth\n--no-seek\n--no-refine\n--no-rotation\n--no-spans')" \
		_diskgeo "$DISKGEO" profile --no-
	expect "$tag: the shared flags" "$(printf -- '--quiet\n--verbose\n-J\n-Q')" _diskgeo "$DISKGEO" bandwidth -
	exactly "$tag: engines" "psync" _diskgeo "$DISKGEO" seek --engine p
	exactly "$tag: sim: presets" "$(printf 'sim:wd-red-4tb')" _diskgeo "$DISKGEO" seek sim:wd
	expect "$tag: every preset after sim:" "$(printf 'sim:cheetah-15k\nsim:hgst-7k1000\nsim:seagate-st4000vn006\nsim:wd-red-4tb')" \
		_diskgeo "$DISKGEO" profile sim:
	exactly "$tag: model presets" "hgst-7k1000" _diskgeo "$DISKGEO" model hg
	dev=$(for d in /sys/class/block/*; do n=${d##*/}; case $n in loop* | ram* | zram*) ;; *) [ -b /dev/$n ] && echo /dev/$n && break ;; esac; done)
	if [ -n "$dev" ]; then
		expect "$tag: block devices ($dev)" "$dev" _diskgeo "$DISKGEO" probe /dev/
	fi
	expect "$tag: --json takes '-'" "-" _diskgeo "$DISKGEO" read sim:wd-red-4tb --json ""
	exactly "$tag: simdisk commands" "attach" _diskgeo_simdisk diskgeo-simdisk at
	exactly "$tag: simdisk attach presets" "wd-red-4tb" _diskgeo_simdisk diskgeo-simdisk attach wd
}

# the preset names come from `diskgeo model --list`, found on PATH for diskgeo-simdisk
PATH=$(dirname "$DISKGEO"):$PATH
# shellcheck source=/dev/null
. "$SRC/completion/diskgeo.bash"
checks=$((checks + 1))
if complete -p diskgeo | grep -q -- "-F _diskgeo diskgeo" &&
	complete -p diskgeo-simdisk | grep -q -- "-F _diskgeo_simdisk diskgeo-simdisk"; then
	echo "ok: sourcing registers diskgeo and diskgeo-simdisk"
else
	echo "FAIL: sourcing did not register the completions" >&2
	fails=$((fails + 1))
fi
run_all "plain bash"
if [ -r /usr/share/bash-completion/bash_completion ]; then
	# shellcheck source=/dev/null
	. /usr/share/bash-completion/bash_completion
	. "$SRC/completion/diskgeo.bash"
	run_all "with bash-completion"
fi
echo "$checks checks, $fails failures"
[ "$fails" = 0 ]
