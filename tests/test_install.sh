#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `cmake --install` puts a working diskgeo under the prefix: the binaries, the tools, the drive
# presets and the man pages, and nothing outside the prefix.
#
#   test_install.sh CMAKE BUILD_DIR SOURCE_DIR SIMDISK(ON|OFF)
#
# Installs BUILD_DIR with --prefix /usr/local into a DESTDIR temporary directory (as a package
# build does) and checks the tree:
#   bin/diskgeo, bin/diskgeo-plot, bin/diskgeo-simdisk (when SIMDISK is ON) are executables;
#   share/man/man8/diskgeo.8, share/man/man8/diskgeo-simdisk.8 (SIMDISK ON) and
#   share/man/man1/diskgeo-plot.1 are there, identical to man/;
#   share/diskgeo/specs/ holds exactly the presets of presets/, byte for byte;
# then that the installed diskgeo runs and measures a sim: drive from an installed spec, that the
# installed diskgeo-plot answers --help, that `man -l` renders each installed page, and that
# `man -M <installed share/man> diskgeo` finds the page as `man diskgeo` will after a real install.
# Exit 0 when all hold, 1 otherwise (each miss named on stderr).
set -u

CMAKE=${1:?usage: test_install.sh CMAKE BUILD_DIR SOURCE_DIR SIMDISK}
BUILD=${2:?usage: test_install.sh CMAKE BUILD_DIR SOURCE_DIR SIMDISK}
SRC=${3:?usage: test_install.sh CMAKE BUILD_DIR SOURCE_DIR SIMDISK}
SIMDISK=${4:-OFF}
PREFIX=/usr/local
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
dest=$tmp/dest
root=$dest$PREFIX

if ! DESTDIR=$dest "$CMAKE" --install "$BUILD" --prefix "$PREFIX" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	echo "FAIL: cmake --install failed" >&2
	exit 1
fi

# Nothing lands outside the prefix.
outside=$(cd "$dest" && find . \( -type f -o -type l \) ! -path ".$PREFIX/*")
[ -z "$outside" ] || fail "installed outside $PREFIX: $outside"

# ---- executables ----
exes="diskgeo diskgeo-plot"
[ "$SIMDISK" = ON ] && exes="$exes diskgeo-simdisk"
for exe in $exes; do
	[ -f "$root/bin/$exe" ] && [ -x "$root/bin/$exe" ] || fail "bin/$exe is missing or not executable"
done
if [ "$SIMDISK" != ON ] && [ -e "$root/bin/diskgeo-simdisk" ]; then
	fail "bin/diskgeo-simdisk installed although it was not built"
fi

# ---- man pages: there and identical to the sources ----
pages="man8/diskgeo.8 man1/diskgeo-plot.1"
[ "$SIMDISK" = ON ] && pages="$pages man8/diskgeo-simdisk.8"
for p in $pages; do
	f=$root/share/man/$p
	if [ ! -f "$f" ]; then
		fail "share/man/$p is missing"
	elif ! cmp -s "$f" "$SRC/man/$(basename "$p")"; then
		fail "share/man/$p differs from man/$(basename "$p")"
	fi
done

# ---- presets: exactly presets/*.json ----
specs=$root/share/diskgeo/specs
nsrc=0
for s in "$SRC"/presets/*.json; do
	nsrc=$((nsrc + 1))
	b=$(basename "$s")
	cmp -s "$s" "$specs/$b" || fail "share/diskgeo/specs/$b is missing or differs from presets/$b"
done
ninst=$(find "$specs" -name '*.json' 2>/dev/null | wc -l)
[ "$ninst" -eq "$nsrc" ] || fail "share/diskgeo/specs holds $ninst specs, presets/ $nsrc"
[ "$nsrc" -ge 4 ] || fail "expected at least 4 presets, found $nsrc"

# ---- the installed programs run ----
if [ -x "$root/bin/diskgeo" ]; then
	v=$("$root/bin/diskgeo" --version 2>&1) || fail "installed diskgeo --version exited $?"
	case $v in "diskgeo "[0-9]*) ;; *) fail "installed diskgeo --version said '$v'" ;; esac
	# A sim: drive read from an installed spec: its capacity comes out of the spec.
	spec=$specs/hgst-7k1000.json
	if [ -f "$spec" ]; then
		"$root/bin/diskgeo" probe "sim:$spec" --json "$tmp/probe.json" >/dev/null 2>&1 ||
			fail "installed diskgeo cannot probe sim:$spec"
		grep -q '"size_bytes": 1000204886016' "$tmp/probe.json" 2>/dev/null ||
			fail "sim:$spec does not have the 1953525168 x 512-byte capacity of its spec"
	fi
fi
if [ -x "$root/bin/diskgeo-plot" ]; then
	head -n 1 "$root/bin/diskgeo-plot" | grep -q '^#!/usr/bin/env python3' ||
		fail "bin/diskgeo-plot does not start with #!/usr/bin/env python3"
	if [ -x /usr/bin/python3 ]; then
		/usr/bin/python3 "$root/bin/diskgeo-plot" --help >/dev/null 2>&1 ||
			fail "installed diskgeo-plot --help failed"
	fi
fi
if [ "$SIMDISK" = ON ] && [ -x "$root/bin/diskgeo-simdisk" ]; then
	"$root/bin/diskgeo-simdisk" --version >/dev/null 2>&1 ||
		fail "installed diskgeo-simdisk --version failed"
fi

# ---- the pages render: man -l, and a lookup the way `man diskgeo` does it ----
# render FILE TITLE: the page formats to text holding its title, NAME and SYNOPSIS.
render_ok() {
	grep -q "$2" "$1" && grep -q '^NAME' "$1" && grep -q '^SYNOPSIS' "$1"
}
if command -v man >/dev/null 2>&1; then
	for p in $pages; do
		f=$root/share/man/$p
		[ -f "$f" ] || continue
		title=$(basename "$p" | sed -e 's/\.[0-9]$//' | tr a-z A-Z)
		MANPAGER=cat PAGER=cat MANWIDTH=80 man -l "$f" >"$tmp/render.txt" 2>"$tmp/render.err" ||
			fail "man -l share/man/$p exited $?: $(cat "$tmp/render.err")"
		render_ok "$tmp/render.txt" "$title" || fail "man -l share/man/$p did not render"
	done
	MANPAGER=cat PAGER=cat MANWIDTH=80 man -M "$root/share/man" diskgeo >"$tmp/lookup.txt" 2>&1 ||
		fail "man -M <prefix>/share/man diskgeo exited $?: $(head -n 1 "$tmp/lookup.txt")"
	render_ok "$tmp/lookup.txt" "DISKGEO(8)" || fail "man -M <prefix>/share/man diskgeo did not find diskgeo(8)"
	MANPAGER=cat PAGER=cat MANWIDTH=80 man -M "$root/share/man" 1 diskgeo-plot >"$tmp/lookup.txt" 2>&1 ||
		fail "man -M <prefix>/share/man 1 diskgeo-plot exited $?"
	# Informational: whether `man diskgeo` will find $PREFIX pages on this system at all.
	if command -v manpath >/dev/null 2>&1; then
		case ":$(manpath 2>/dev/null):" in
		*":$PREFIX/share/man:"*) echo "manpath includes $PREFIX/share/man" ;;
		*) echo "note: manpath does not include $PREFIX/share/man on this system" ;;
		esac
	fi
else
	# No man(1): groff renders the pages instead.
	for p in $pages; do
		f=$root/share/man/$p
		[ -f "$f" ] || continue
		groff -man -Tutf8 "$f" >"$tmp/render.txt" 2>&1 && grep -q '^NAME' "$tmp/render.txt" ||
			fail "groff cannot render share/man/$p"
	done
	echo "man(1) not installed: pages rendered with groff instead"
fi

echo "installed tree checked under DESTDIR$PREFIX ($(cd "$dest" && find . -type f | wc -l) files), $fails failures"
[ "$fails" -eq 0 ]
