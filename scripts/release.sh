#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Build a release from a tag: the source tarball, the Debian package built
# from that tarball, and their checksums.
#   scripts/release.sh [--no-deb] TAG [OUTDIR]     (default OUTDIR: .)
#
# Run it from a clean checkout of the tag (git checkout vX.Y.Z). It refuses,
# before building anything:
# - a working tree with changes or untracked files, or HEAD not at TAG;
# - a TAG that is not an annotated tag named vX.Y.Z, or whose X.Y.Z is not
#   the version in its CMakeLists.txt (a signed tag must verify);
# - a CHANGELOG.md at TAG without a dated section for X.Y.Z at the top, or
#   with entries left under [Unreleased];
# - what scripts/compat.py finds against the previous release tag (error
#   codes renumbered, interfaces removed or added against the rules of
#   docs/versioning.md).
#
# Then it writes into OUTDIR:
# - frond-X.Y.Z.tar.gz: git archive of TAG under frond-X.Y.Z/, every file
#   dated the tagged commit's time, owned by root, gzip without a name or
#   a time: the same bytes on every run, on every machine with the same
#   git and gzip;
# - frond_X.Y.Z_<arch>.deb: scripts/deb.sh run inside that tarball,
#   unpacked (never from the working tree), dated the same
#   (SOURCE_DATE_EPOCH); --no-deb leaves it out;
# - SHA256SUMS: `sha256sum -c SHA256SUMS` in OUTDIR checks both;
# and prints the path of each. The package's Maintainer field comes from
# DEBFULLNAME and DEBEMAIL, else from git's user.name and user.email.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "scripts/release.sh: $*" >&2; exit 1; }
need() {
  command -v "$1" >/dev/null || die "$1 is missing (Debian package $2)"
}
need git git
need gzip gzip
need sha256sum coreutils
need python3 python3

deb=1
if [ "${1:-}" = --no-deb ]; then
  deb=0
  shift
fi
case ${1:-} in
'' | -*) echo "usage: scripts/release.sh [--no-deb] TAG [OUTDIR]" >&2; exit 2 ;;
esac
tag=$1
out=${2:-.}
[ -d "$out" ] || die "$out is not a directory"
out=$(cd "$out" && pwd)

# The tag: annotated, vX.Y.Z, what HEAD is, matching the version.
cd "$src"
echo "$tag" | grep -Eq '^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$' ||
  die "$tag is not a release tag: vX.Y.Z, e.g. v0.1.0"
git rev-parse -q --verify "refs/tags/$tag" >/dev/null ||
  die "no tag $tag (git tag -a $tag, or git fetch --tags)"
[ "$(git cat-file -t "refs/tags/$tag")" = tag ] ||
  die "$tag is a lightweight tag: a release tag is annotated (git tag -a or -s), so that it says who made it and when"
if git cat-file tag "refs/tags/$tag" | grep -q '^-----BEGIN PGP SIGNATURE-----'; then
  git verify-tag "$tag" >/dev/null 2>&1 ||
    die "$tag is signed but its signature does not verify (git verify-tag $tag)"
fi
commit=$(git rev-parse "$tag^{commit}")
head=$(git rev-parse HEAD)
[ "$commit" = "$head" ] ||
  die "HEAD is $(git rev-parse --short HEAD), $tag is $(git rev-parse --short "$commit"): run this from a checkout of the tag (git checkout $tag)"
dirty=$(git status --porcelain --untracked-files=normal)
[ -z "$dirty" ] ||
  die "the working tree is not clean (commit, stash or remove these first):
$dirty"
version=${tag#v}
built=$(git show "$tag:CMakeLists.txt" | sed -n 's/^project(frond VERSION \([0-9.]*\).*/\1/p')
[ "$built" = "$version" ] ||
  die "$tag says $version but CMakeLists.txt at $tag says ${built:-no version}: raise project(frond VERSION ...) in the release commit, or tag the right commit"

# The changelog at the tag: [Unreleased] empty, then this version, dated.
changelog=$(git show "$tag:CHANGELOG.md" 2>/dev/null) ||
  die "$tag has no CHANGELOG.md"
top=$(printf '%s\n' "$changelog" | grep -E '^## \[[0-9]' | head -n 1)
printf '%s\n' "$top" | grep -Eq '^## \[[0-9]+\.[0-9]+\.[0-9]+\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$' ||
  die "CHANGELOG.md at $tag: the first version heading is '${top:-none}', not '## [$version] - YYYY-MM-DD'"
[ "$(printf '%s\n' "$top" | sed 's/^## \[\([^]]*\)\].*/\1/')" = "$version" ] ||
  die "CHANGELOG.md at $tag: the first version heading is '$top', not $version's: add $version's section (CONTRIBUTING.md, Releasing)"
date=${top##* - }
date -u -d "$date" +%F 2>/dev/null | grep -qx "$date" ||
  die "CHANGELOG.md at $tag: $date is not a date"
unreleased=$(printf '%s\n' "$changelog" | sed -n '/^## \[Unreleased\]/,/^## \[[0-9]/p' |
  sed '/^<!--/,/-->/d' | grep -E '^[[:space:]]*([-*+]|[0-9]+\.)[[:space:]]' || true)
[ -z "$unreleased" ] ||
  die "CHANGELOG.md at $tag still lists entries under [Unreleased]: move them into $version's section
$unreleased"

# Against the previous release: the highest vX.Y.Z tag below this one
# that the tag's history holds.
prev=$(git tag --merged "$tag" --list 'v*' | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' |
  grep -vx "$tag" | sort -V | tail -n 1 || true)
if [ -n "$prev" ]; then
  python3 "$src/scripts/compat.py" "$prev" "$tag" ||
    die "$tag breaks the rules of docs/versioning.md against $prev (above)"
else
  echo "release: no earlier release tag in $tag's history: nothing to compare"
fi

# Maintainer of the package, asked here: the tarball has no git config.
if [ "$deb" = 1 ]; then
  need dpkg-deb dpkg
  DEBFULLNAME=${DEBFULLNAME:-$(git config user.name || true)}
  DEBEMAIL=${DEBEMAIL:-$(git config user.email || true)}
  if [ -z "$DEBFULLNAME" ] || [ -z "$DEBEMAIL" ]; then
    die "set DEBFULLNAME and DEBEMAIL (the package's Maintainer field)"
  fi
  export DEBFULLNAME DEBEMAIL
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
name=frond-$version
epoch=$(git log -1 --format=%ct "$commit")
years=$(git log --reverse --format=%cd --date=format:%Y "$commit" | sed -n '1p;$p' | uniq | paste -sd-)

# The tarball. git archive dates every file with the commit's time when
# given a tag; the umask is set so that a maintainer's tar.umask does not
# change the modes; gzip -n stores no name and no time.
tarball=$out/$name.tar.gz
git -c tar.umask=0022 archive --format=tar --prefix="$name/" "$tag" |
  gzip -9n >"$tmp/$name.tar.gz"
mv "$tmp/$name.tar.gz" "$tarball"
echo "$tarball"
made="$name.tar.gz"

# The package, from the tarball alone: no git above it, the tag's time.
if [ "$deb" = 1 ]; then
  mkdir "$tmp/src" "$tmp/deb"
  tar -xzf "$tarball" -C "$tmp/src"
  pkg=$(cd "$tmp/src/$name" &&
    GIT_CEILING_DIRECTORIES=$tmp SOURCE_DATE_EPOCH=$epoch \
      FROND_DEB_SOURCE=$tag FROND_DEB_YEARS=$years \
      sh scripts/deb.sh "$tmp/deb") || die "scripts/deb.sh failed in the tarball of $tag"
  [ -f "$pkg" ] || die "scripts/deb.sh made no package: $pkg"
  mv "$pkg" "$out/"
  pkg=$out/$(basename "$pkg")
  echo "$pkg"
  made="$made $(basename "$pkg")"
fi

# Checksums of what this run made, in OUTDIR's terms.
# shellcheck disable=SC2086 # $made is a list of plain file names
(cd "$out" && sha256sum $made >SHA256SUMS)
echo "$out/SHA256SUMS"
