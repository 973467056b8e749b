#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The Debian package: `cpack -G DEB` builds diskgeo_<version>_amd64.deb with the binaries, the
# plot tool, the presets, the man pages (gzipped), the completion and the schema, its Depends
# (liburing2, libjansson4, fuse3, python3) and Recommends (python3-matplotlib) right, lintian
# clean (no error or warning); `dpkg -i` installs it, and from the installed paths
# `diskgeo --version`, `man -w diskgeo` and a sim: profile from an installed spec work; then
# `dpkg --purge` removes every file.
#
#   test_deb.sh BUILD_DIR VERSION
#
# Needs root (dpkg -i) and cpack, dpkg-deb; exit 77 (skipped) without them, or when a diskgeo
# package is installed already (it is not ours to replace). Exit 0 when all hold, 1 otherwise.
set -u
BUILD=${1:?usage: test_deb.sh BUILD_DIR VERSION}
VERSION=${2:?usage: test_deb.sh BUILD_DIR VERSION}
fails=0

skip() {
	echo "test_deb: $*; skipped"
	exit 77
}
[ "$(id -u)" = 0 ] || skip "not root"
for t in cpack dpkg-deb dpkg; do
	command -v $t >/dev/null || skip "no $t"
done
if dpkg-query -W -f='${Status}' diskgeo 2>/dev/null | grep -q 'installed'; then
	skip "a diskgeo package is installed already"
fi

check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what" >&2
		fails=$((fails + 1))
	fi
}

T=$(mktemp -d) || exit 1
installed=0
cleanup() {
	[ "$installed" = 1 ] && dpkg --purge diskgeo >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

if ! (cd "$BUILD" && cpack -G DEB -B "$T/pkg" >"$T/cpack.log" 2>&1); then
	cat "$T/cpack.log" >&2
	echo "FAIL: cpack -G DEB failed" >&2
	exit 1
fi
deb=$T/pkg/diskgeo_${VERSION}_amd64.deb
check "cpack wrote diskgeo_${VERSION}_amd64.deb" test -s "$deb"
[ -s "$deb" ] || exit 1

depends=$(dpkg-deb -f "$deb" Depends)
for d in liburing2 libjansson4 libfuse3-3 fuse3 python3; do
	check "Depends: $d" grep -qE "(^|, )$d( |,|$)" <<<"$depends"
done
check "Recommends: python3-matplotlib" grep -qx "python3-matplotlib" <<<"$(dpkg-deb -f "$deb" Recommends)"
check "Package/Version/Architecture" test "$(dpkg-deb -f "$deb" Package Version Architecture | tr '\n' ' ')" = \
	"Package: diskgeo Version: $VERSION Architecture: amd64 "
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$T/files"
for f in /usr/bin/diskgeo /usr/bin/diskgeo-plot /usr/bin/diskgeo-simdisk \
	/usr/share/man/man8/diskgeo.8.gz /usr/share/man/man8/diskgeo-simdisk.8.gz \
	/usr/share/man/man1/diskgeo-plot.1.gz /usr/share/diskgeo/specs/wd-red-4tb.json \
	/usr/share/bash-completion/completions/diskgeo /usr/share/doc/diskgeo/copyright \
	/usr/share/doc/diskgeo/changelog.gz /usr/share/doc/diskgeo/profile.schema.json \
	/usr/share/doc/diskgeo/drive-spec.md; do
	check "the package holds $f" grep -qx "$f" "$T/files"
done
if command -v lintian >/dev/null; then
	lintian --allow-root "$deb" >"$T/lintian.txt" 2>&1
	check "lintian: no error or warning" bash -c "! grep -E '^[EW]: ' '$T/lintian.txt'"
	grep -E '^[EWIP]: ' "$T/lintian.txt" | head -n 20
else
	echo "skip lintian: not installed (apt-get install lintian)"
fi

if ! dpkg -i "$deb" >"$T/dpkg.log" 2>&1; then
	cat "$T/dpkg.log" >&2
	echo "FAIL: dpkg -i failed" >&2
	installed=1
	exit 1
fi
installed=1
check "/usr/bin/diskgeo --version" test "$(/usr/bin/diskgeo --version)" = "diskgeo $VERSION"
check "man -w diskgeo finds the installed page" test "$(man -w diskgeo 2>/dev/null)" = \
	/usr/share/man/man8/diskgeo.8.gz
check "the installed page renders" bash -c "man -P cat diskgeo 2>/dev/null | grep -q 'measure a hard disk'"
/usr/bin/diskgeo profile sim:/usr/share/diskgeo/specs/wd-red-4tb.json -n 32 --seek-budget 10s \
	--json "$T/installed.json" >"$T/profile.out" 2>"$T/profile.err"
check "a sim: profile from the installed spec: exit 0" test $? = 0
check "... a whole profile" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"]["path"] == "sim:/usr/share/diskgeo/specs/wd-red-4tb.json"
assert d["bandwidth"]["zones"] and d["seek"]["points"] and d["rotation"]["rpm"] > 5000
' "$T/installed.json"
check "/usr/bin/diskgeo-plot --version" test "$(/usr/bin/diskgeo-plot --version)" = "diskgeo-plot $VERSION"
check "/usr/bin/diskgeo-simdisk --version" test "$(/usr/bin/diskgeo-simdisk --version)" = "diskgeo-simdisk $VERSION"
check "the completion loads and completes" bash -c \
	'. /usr/share/bash-completion/completions/diskgeo && COMP_WORDS=(diskgeo pro) COMP_CWORD=1 && _diskgeo && [ "${COMPREPLY[*]}" = "probe profile" ]'

dpkg --purge diskgeo >"$T/purge.log" 2>&1
check "dpkg --purge: exit 0" test $? = 0
installed=0
check "... every file is gone" bash -c "! ls /usr/bin/diskgeo /usr/share/diskgeo /usr/share/doc/diskgeo /usr/share/man/man8/diskgeo.8.gz 2>/dev/null | grep -q ."

echo "test_deb: $fails failure(s)"
[ "$fails" = 0 ]
