#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make install` honours PREFIX and DESTDIR, installs the header, both
# libraries, frond.pc, the command and its manual pages, the systemd unit
# and the example configuration, and a program built with pkg-config
# against the installed copy links and issues IDs
# (statically and dynamically).
set -eu
src=${FROND_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=/opt/frond-test
cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DFROND_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX=$prefix >/dev/null
cmake --build "$tmp/build" -j 2 >/dev/null
DESTDIR="$tmp/root" cmake --install "$tmp/build" >/dev/null
root="$tmp/root$prefix"
for f in include/frond.h include/frond/coord.h include/frond/format.h include/frond/inline.h include/frond/log.h include/frond/store.h lib/libfrond.a lib/libfrond.so lib/pkgconfig/frond.pc \
  bin/frond share/man/man1/frond.1 share/man/man5/frond.conf.5; do
  [ -e "$root/$f" ] || { echo "FAIL: $f not installed under PREFIX"; exit 1; }
done
# The installed pages are the ones in the tree, and man finds them there.
cmp -s "$src/man/frond.1" "$root/share/man/man1/frond.1" &&
  cmp -s "$src/man/frond.conf.5" "$root/share/man/man5/frond.conf.5" ||
  { echo "FAIL: installed man pages differ from man/"; exit 1; }
command -v man >/dev/null ||
  { echo "FAIL: man is not installed (Debian package man-db; scripts/deps.sh test installs it)"; exit 1; }
for page in 1:frond 5:frond.conf; do
  out=$(MANPATH="$root/share/man" MANWIDTH=80 man -P cat "${page%%:*}" \
    "${page#*:}" 2>&1) || { echo "FAIL: man ${page%%:*} ${page#*:}: $out"; exit 1; }
  echo "$out" | grep -q "^NAME" ||
    { echo "FAIL: man ${page%%:*} ${page#*:} shows no NAME section"; exit 1; }
done
# The systemd unit runs the installed command with the installed
# configuration (GNUInstallDirs puts /opt/X's in /etc/opt/X), which an
# install leaves alone once it exists.
unit="$root/lib/systemd/system/frond.service"
conf="$tmp/root/etc$prefix/frond/frond.conf"
[ -f "$unit" ] || { echo "FAIL: frond.service not installed under PREFIX"; exit 1; }
grep -qx "ExecStart=$prefix/bin/frond serve --config /etc$prefix/frond/frond.conf" "$unit" ||
  { echo "FAIL: the unit does not run the installed command:"; grep ExecStart "$unit"; exit 1; }
cmp -s "$src/dist/frond.conf" "$conf" ||
  { echo "FAIL: $conf is not dist/frond.conf"; exit 1; }
echo "listen = 127.0.0.1:9999" >>"$conf"
DESTDIR="$tmp/root" cmake --install "$tmp/build" >/dev/null
grep -q "^listen = 127.0.0.1:9999" "$conf" ||
  { echo "FAIL: a second install overwrote the operator's frond.conf"; exit 1; }
grep -q "^prefix=$prefix\$" "$root/lib/pkgconfig/frond.pc" ||
  { echo "FAIL: frond.pc does not name the prefix"; exit 1; }
cat >"$tmp/use.c" <<'C'
#include <frond.h>
#include <stdio.h>
int main(void) {
  frond_layout l;
  frond_gen *g;
  int64_t id;
  frond_fields f;
  char u[FROND_UUID_STRLEN + 1]; /* from frond/format.h, through frond.h */
  uint8_t b[16];
  if (frond_uuid4(b, NULL) != 0)
    return 1;
  frond_uuid_format(b, u);
  if (frond_layout_parse("twitter", &l, NULL) != 0 ||
      frond_gen_create(&g, &l, 9, NULL, NULL) != 0 ||
      frond_gen_next(g, &id, NULL) != 0 || frond_decode(&l, id, &f, NULL) != 0)
    return 1;
  frond_gen_close(g, NULL);
  printf("%s\n", f.node == 9 ? "ok" : "bad");
  return 0;
}
C
export PKG_CONFIG_PATH="$root/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$tmp/root"
cc -o "$tmp/use_shared" "$tmp/use.c" $(pkg-config --cflags --libs frond)
# Static: the archive, then the dependencies frond.pc names as private
# (their own dynamic libraries; Debian ships no static libpq).
deps=$(sed -n 's/^Requires.private: *//p' "$root/lib/pkgconfig/frond.pc")
privs=$(sed -n 's/^Libs.private: *//p' "$root/lib/pkgconfig/frond.pc")
cc -o "$tmp/use_static" "$tmp/use.c" $(pkg-config --cflags frond) \
  "$root/lib/libfrond.a" $(pkg-config --libs $deps) $privs
# The static line docs/library.md shows, as written (app.c our program).
doc=$(awk '/^```sh$/ { b = ""; on = 1; next } /^```$/ { if (on && b ~ /libfrond\.a/) print b; on = 0; next } on { b = b $0 "\n" }' \
  "$FROND_SRC/docs/library.md" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
case $doc in
"cc app.c "*) ;;
*) echo "FAIL: docs/library.md shows no static link line: $doc"; exit 1 ;;
esac
(cd "$tmp" && cp use.c app.c && sh -c "$doc -o use_doc") ||
  { echo "FAIL: docs/library.md's static link line: $doc"; exit 1; }
out1=$(LD_LIBRARY_PATH="$root/lib" "$tmp/use_shared")
out2=$("$tmp/use_static")
out3=$("$tmp/use_doc")
[ "$out1" = ok ] && [ "$out2" = ok ] && [ "$out3" = ok ] ||
  { echo "FAIL: $out1 $out2 $out3"; exit 1; }
ldd "$tmp/use_doc" | grep -q libfrond &&
  { echo "FAIL: docs/library.md's static line links libfrond.so"; exit 1; }
# Segment IDs on a handle, through frond.h's inline call, through the
# exported function (FROND_NO_INLINE), and from C++: the same numbers.
# The header compiles without a warning under strict flags.
cat >"$tmp/seg.c" <<'C'
#include <frond.h>
#include <inttypes.h>
#include <stdio.h>
int main(int argc, char **argv) {
  frond_store *st;
  frond_seg *s;
  frond_seg_tag *h;
  frond_seg_options o;
  frond_error e;
  int64_t id = 0, sum = 0;
  int i;
  if (argc < 2 || frond_store_open(&st, argv[1], &e) != 0 ||
      frond_store_tag_create(st, "t", 10, 1, "", &e) != 0)
    return 1;
  frond_store_close(st);
  /* 100 segments in a row with no time to load ahead: wait for each as
  ** for the first (a loaded machine's SQLite can take over 50 ms). */
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms;
  if (frond_seg_open(&s, argv[1], &o, &e) != 0 ||
      frond_seg_tag_get(s, "t", 1, &h, &e) != 0)
    return 1;
  for (i = 0; i < 1000; i++) {
    if (frond_seg_tag_next(h, &id, &e) != 0) {
      fprintf(stderr, "%s\n", e.message);
      return 1;
    }
    sum += id;
  }
  frond_seg_close(s);
  printf("%" PRId64 " %" PRId64 "\n", id, sum);
  return 0;
}
C
cp "$tmp/seg.c" "$tmp/seg.cc"
cc -std=c11 -Wall -Wextra -Wconversion -Werror -o "$tmp/seg_inline" "$tmp/seg.c" \
  $(pkg-config --cflags --libs frond)
cc -std=c11 -Wall -Wextra -Wconversion -Werror -DFROND_NO_INLINE -o "$tmp/seg_call" \
  "$tmp/seg.c" $(pkg-config --cflags --libs frond)
c++ -Wall -Wextra -Wconversion -Wold-style-cast -Werror -o "$tmp/seg_cxx" "$tmp/seg.cc" \
  $(pkg-config --cflags --libs frond)
nm "$tmp/seg_inline" | grep -q ' U frond__seg_tag_next_slow' &&
  ! nm "$tmp/seg_inline" | grep -q ' U frond_seg_tag_next$' ||
  { echo "FAIL: frond_seg_tag_next was not inlined"; exit 1; }
nm "$tmp/seg_call" | grep -q ' U frond_seg_tag_next$' ||
  { echo "FAIL: FROND_NO_INLINE did not call the exported function"; exit 1; }
for p in seg_inline seg_call seg_cxx; do
  out=$(LD_LIBRARY_PATH="$root/lib" "$tmp/$p" "sqlite:$tmp/$p.db") ||
    { echo "FAIL: $p: $out"; exit 1; }
  [ "$out" = "1000 500500" ] || { echo "FAIL: $p printed $out"; exit 1; }
done
# frond_gen_next likewise: inlined, calling frond__gen_next_slow, unless
# FROND_NO_INLINE; both issue increasing IDs.
cat >"$tmp/gen.c" <<'C'
#include <frond.h>
#include <stdio.h>
int main(void) {
  frond_layout l;
  frond_gen *g;
  frond_error e = {0, ""};
  int64_t id = 0, last = -1;
  if (frond_layout_parse("frond", &l, &e) != 0 ||
      frond_gen_create(&g, &l, 1, NULL, &e) != 0) {
    fprintf(stderr, "%s\n", e.message);
    return 1;
  }
  for (int i = 0; i < 100000; i++) {
    if (frond_gen_next(g, &id, &e) != 0 || id <= last) {
      fprintf(stderr, "%s\n", e.message);
      return 1;
    }
    last = id;
  }
  frond_gen_close(g, NULL);
  printf("ok\n");
  return 0;
}
C
cp "$tmp/gen.c" "$tmp/gen.cc"
cc -std=c11 -Wall -Wextra -Wconversion -Werror -o "$tmp/gen_inline" "$tmp/gen.c" \
  $(pkg-config --cflags --libs frond)
cc -std=c11 -Wall -Wextra -Wconversion -Werror -DFROND_NO_INLINE -o "$tmp/gen_call" \
  "$tmp/gen.c" $(pkg-config --cflags --libs frond)
c++ -Wall -Wextra -Wconversion -Wold-style-cast -Werror -o "$tmp/gen_cxx" "$tmp/gen.cc" \
  $(pkg-config --cflags --libs frond)
nm "$tmp/gen_inline" | grep -q ' U frond__gen_next_slow' &&
  ! nm "$tmp/gen_inline" | grep -q ' U frond_gen_next$' ||
  { echo "FAIL: frond_gen_next was not inlined"; exit 1; }
nm "$tmp/gen_call" | grep -q ' U frond_gen_next$' ||
  { echo "FAIL: FROND_NO_INLINE did not call frond_gen_next"; exit 1; }
for p in gen_inline gen_call gen_cxx; do
  out=$(cd "$tmp" && LD_LIBRARY_PATH="$root/lib" "$tmp/$p") ||
    { echo "FAIL: $p: $out"; exit 1; }
  [ "$out" = "ok" ] || { echo "FAIL: $p printed $out"; exit 1; }
done
# The shared library exports the public API only.
if nm -D --defined-only "$root/lib/libfrond.so" | awk '{print $3}' |
  grep -v '^frond_' | grep -v '^_' | grep -q .; then
  echo "FAIL: libfrond.so exports non-API symbols:"
  nm -D --defined-only "$root/lib/libfrond.so" | awk '{print $3}' | grep -v '^frond_' | grep -v '^_'
  exit 1
fi
# Internal frond__ symbols are not exported, but for the two that frond.h's
# inline frond_seg_tag_next and frond_gen_next call.
if nm -D --defined-only "$root/lib/libfrond.so" | awk '{print $3}' |
  grep '^frond__' | grep -vx 'frond__seg_tag_next_slow' |
  grep -vx 'frond__gen_next_slow' | grep -q .; then
  echo "FAIL: libfrond.so exports internal frond__ symbols"; exit 1
fi
# Bound at load time (-z now), the relocation table read-only (relro):
# no lazy first call runs the resolver over a key in vector registers.
for f in "$root/lib/libfrond.so" "$root/bin/frond"; do
  readelf -d "$f" | grep -q 'FLAGS.*BIND_NOW' ||
    { echo "FAIL: $f is not linked with -z now"; exit 1; }
  readelf -lW "$f" | grep -q GNU_RELRO ||
    { echo "FAIL: $f has no RELRO segment"; exit 1; }
done
echo "1 passed, 0 failed"
