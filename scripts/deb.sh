#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Build the Debian package frond_<version>_<arch>.deb from this tree.
#   scripts/deb.sh [OUTDIR]       (default: the current directory)
#
# One binary package holding the command, the libraries, the header,
# frond.pc, the systemd unit, the man pages and /etc/frond/frond.conf (a
# conffile), built with dpkg-deb from a CMake install: no source package
# and no debhelper, so nothing beyond build-essential (which brings
# dpkg-dev) is needed. What debhelper would do is done here, plainly:
# Debian's hardening flags, stripping, compressed man pages and
# changelog, shared library dependencies (dpkg-shlibdeps), the shlibs
# file, the ldconfig trigger, md5sums and the systemd maintainer
# snippets.
#
# The Maintainer field comes from DEBFULLNAME and DEBEMAIL, else from git's
# user.name and user.email. FROND_DEB_BUILD=DIR builds in DIR (kept) rather
# than in a temporary directory. SOURCE_DATE_EPOCH (default: the last
# commit's time) dates the changelog and the files, so that two builds of
# one commit give the same package. Outside a git checkout (a release
# tarball: scripts/release.sh) FROND_DEB_SOURCE names what the package is
# built from (a tag) and FROND_DEB_YEARS the copyright's years.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:-.}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

need() {
  command -v "$1" >/dev/null ||
    { echo "scripts/deb.sh: $1 is missing (Debian package $2)" >&2; exit 1; }
}
need dpkg-deb dpkg
need dpkg-shlibdeps dpkg-dev
need dpkg-buildflags dpkg-dev
need cmake cmake

version=$(sed -n 's/^project(frond VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "scripts/deb.sh: no version in CMakeLists.txt" >&2; exit 1; }
arch=$(dpkg --print-architecture)
name=${DEBFULLNAME:-$(git -C "$src" config user.name 2>/dev/null || true)}
email=${DEBEMAIL:-$(git -C "$src" config user.email 2>/dev/null || true)}
[ -n "$name" ] && [ -n "$email" ] ||
  { echo "scripts/deb.sh: set DEBFULLNAME and DEBEMAIL (the Maintainer field)" >&2; exit 1; }
: "${SOURCE_DATE_EPOCH:=$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH

# Build with Debian's hardening flags (all of them: PIE, bind now,
# fortify, stack protector), as a release, from the source directory so
# that -ffile-prefix-map maps it to ".".
build=${FROND_DEB_BUILD:-$tmp/build}
flags() { (cd "$src" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"); }
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFROND_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_C_FLAGS="$(flags CPPFLAGS) $(flags CFLAGS)" \
  -DCMAKE_EXE_LINKER_FLAGS="$(flags LDFLAGS)" \
  -DCMAKE_SHARED_LINKER_FLAGS="$(flags LDFLAGS)" >/dev/null
cmake --build "$build" -j "${JOBS:-2}" >/dev/null
root=$tmp/root
DESTDIR=$root cmake --install "$build" >/dev/null

# Only what the package ships: bench programs are not installed; strip
# what the build left for debuggers.
libdir=$(cd "$root" && ls -d usr/lib/*/pkgconfig | sed 's|/pkgconfig$||')
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$root/usr/bin/frond" "$root/$libdir/libfrond.so.$version"
strip --strip-debug --remove-section=.comment --enable-deterministic-archives \
  "$root/$libdir/libfrond.a"
gzip -9n "$root"/usr/share/man/man1/frond.1 "$root"/usr/share/man/man5/frond.conf.5
doc=$root/usr/share/doc/frond
mkdir -p "$doc"
date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
printf 'frond (%s) unstable; urgency=medium\n\n  * Frond %s, built from %s.\n\n -- %s <%s>  %s\n' \
  "$version" "$version" "${FROND_DEB_SOURCE:-$(git -C "$src" describe --always --dirty 2>/dev/null || echo 'a source tree')}" \
  "$name" "$email" "$date" | gzip -9n >"$doc/changelog.gz"
years=${FROND_DEB_YEARS:-$(git -C "$src" log --reverse --format=%cd --date=format:%Y 2>/dev/null | sed -n '1p;$p' | uniq | paste -sd-)}
: "${years:=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)}"
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: frond

Files: *
Copyright: $years the Frond authors
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
EOF

# Frond ships as one package: the library's development files (the .so
# link, the header, frond.pc) sit beside the library and the command,
# which lintian accepts for a small package once told so.
mkdir -p "$root/usr/share/lintian/overrides"
cat >"$root/usr/share/lintian/overrides/frond" <<EOF
# One package holds the library and its development files.
frond: link-to-shared-library-in-wrong-package $libdir/libfrond.so.$version [$libdir/libfrond.so]
frond: package-name-doesnt-match-sonames libfrond0
EOF

# Control files.
mkdir -p "$root/DEBIAN"
printf '/etc/frond/frond.conf\n' >"$root/DEBIAN/conffiles"
# The soname is libfrond.so.0 for all of 0.x, and a 0.y.0 release may
# change the ABI under it (docs/versioning.md): a program built against
# 0.y needs a library of the same 0.y series.
case $version in
0.*) printf 'libfrond 0 frond (>= %s), frond (<< 0.%s~)\n' "$version" \
  "$(($(echo "$version" | cut -d. -f2) + 1))" >"$root/DEBIAN/shlibs" ;;
*) printf 'libfrond %s frond (>= %s)\n' "${version%%.*}" \
  "$(echo "$version" | cut -d. -f1-2).0" >"$root/DEBIAN/shlibs" ;;
esac
printf 'activate-noawait ldconfig\n' >"$root/DEBIAN/triggers"
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# frond postinst: make the unit known; an upgrade restarts a running
# server (a clean stop stores the exact high-water time: no wait, no
# duplicate). A first install neither enables nor starts it: choose the
# node ID, store and coordinator in /etc/frond/frond.conf first, then
# `systemctl enable --now frond`.
set -e
if [ "$1" = configure ] || [ "$1" = abort-upgrade ]; then
  deb-systemd-helper unmask frond.service >/dev/null || true
  deb-systemd-helper update-state frond.service >/dev/null || true
  if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
    if [ -n "${2:-}" ]; then
      deb-systemd-invoke try-restart frond.service >/dev/null || true
    fi
  fi
fi
exit 0
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
# frond prerm: stop the server before its files go (SIGTERM: it drains
# and stores its high-water time).
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  deb-systemd-invoke stop frond.service >/dev/null || true
fi
exit 0
EOF
cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# frond postrm. Purging keeps /var/lib/frond: its high-water file is what
# keeps a node from repeating IDs after a clock goes back; delete it by
# hand only when the node ID will never be used again.
set -e
if [ -d /run/systemd/system ]; then
  systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
  deb-systemd-helper purge frond.service >/dev/null || true
  deb-systemd-helper unmask frond.service >/dev/null || true
fi
exit 0
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

# Dependencies of the command and the library, as dpkg-shlibdeps finds
# them (it reads a debian/control, which this package does not keep).
mkdir -p "$tmp/pkg/debian"
printf 'Source: frond\n\nPackage: frond\nArchitecture: any\n' >"$tmp/pkg/debian/control"
depends=$(cd "$tmp/pkg" && dpkg-shlibdeps -O -e"$root/usr/bin/frond" \
  -e"$root/$libdir/libfrond.so.$version" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "scripts/deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

# The package's files: directories 0755, files 0644, programs 0755, all
# dated SOURCE_DATE_EPOCH; md5sums of everything but DEBIAN.
find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f ! -path "$root/DEBIAN/p*" ! -path "$root/usr/bin/*" -exec chmod 0644 {} +
chmod 0755 "$root/usr/bin/frond"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
  xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: frond
Version: $version
Architecture: $arch
Maintainer: $name <$email>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Description: unique 64-bit ID service and library (snowflake and segment IDs)
 Frond issues unique 64-bit IDs for distributed systems: order numbers,
 message IDs, primary keys of sharded tables. It offers both schemes of
 Meituan's Leaf, compatible with Leaf's table, ZooKeeper layout and HTTP
 paths: snowflake IDs (time, node and sequence in 63 bits, no database on
 the request path) and segment IDs (increasing integers per tag, reserved
 in ranges from SQLite, PostgreSQL or MySQL/MariaDB and served from
 memory).
 .
 This package holds the frond command and server (HTTP and the Redis
 protocol), its systemd unit, the libfrond library with its header and
 pkg-config file, and the manual pages.
EOF
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/shlibs" \
  "$root/DEBIAN/triggers"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

deb=$out/frond_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
