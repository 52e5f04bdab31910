#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The library stands alone. The tree builds libfrond and frond with
# -DFROND_WITH_PG=OFF -DFROND_WITH_ZK=OFF -DFROND_WITH_MYSQL=OFF -DFROND_WITH_ETCD=OFF; that build
# links neither libpq nor libzookeeper nor libmariadb nor libcurl, its frond.pc names exactly what it links, `frond
# --version` says what was left out, and a URI of a left-out backend fails
# with its stable code and a message naming the missing support. In every
# build, libfrond links no libuv (the server's event loops are not part of
# the library).
set -eu
src=${FROND_SRC:?}
build=${FROND_BUILD:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# This build's library: no libuv.
if needed "$build/libfrond.so" | grep -q '^libuv'; then
  echo "FAIL: libfrond.so links libuv:"; needed "$build/libfrond.so"; exit 1
fi

# A second build with both backends off, bounded in time (two jobs: the
# machine is shared).
cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DFROND_TESTS=OFF \
  -DFROND_WITH_PG=OFF -DFROND_WITH_ZK=OFF -DFROND_WITH_MYSQL=OFF -DFROND_WITH_ETCD=OFF \
  >"$tmp/configure.log" 2>&1 ||
  { echo "FAIL: configure with the backends off:"; cat "$tmp/configure.log"; exit 1; }
timeout 600 cmake --build "$tmp/build" -j 2 --target frond_static frond_shared \
  frond >"$tmp/build.log" 2>&1 ||
  { echo "FAIL: build with the backends off:"; tail -40 "$tmp/build.log"; exit 1; }

lib="$tmp/build/libfrond.so"
deps=$(needed "$lib")
for bad in libpq libzookeeper libmariadb libcurl libuv; do
  if echo "$deps" | grep -q "^$bad"; then
    echo "FAIL: libfrond.so without PG, ZK and MySQL links $bad:"; echo "$deps"; exit 1
  fi
done
for want in libsqlite3 libsodium; do
  echo "$deps" | grep -q "^$want" ||
    { echo "FAIL: libfrond.so does not link $want:"; echo "$deps"; exit 1; }
done

pc="$tmp/build/frond.pc"
req=$(sed -n 's/^Requires.private: *//p' "$pc")
libs=$(sed -n 's/^Libs.private: *//p' "$pc")
[ "$req" = "sqlite3 libsodium" ] ||
  { echo "FAIL: frond.pc Requires.private is '$req', want 'sqlite3 libsodium'"; exit 1; }
[ "$libs" = "-lpthread -lm" ] ||
  { echo "FAIL: frond.pc Libs.private is '$libs', want '-lpthread -lm'"; exit 1; }

frond="$tmp/build/frond"
v=$("$frond" --version)
echo "$v" | grep -q "no PostgreSQL" && echo "$v" | grep -q "no ZooKeeper" &&
  echo "$v" | grep -q "no MySQL" && echo "$v" | grep -q "no etcd" ||
  { echo "FAIL: frond version does not say what was left out:"; echo "$v"; exit 1; }

# expect_fail OUT_PATTERN COMMAND...: exit status 1, and stderr matching.
expect_fail() {
  pat=$1; shift
  set +e
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  if [ $rc -ne 1 ] || ! grep -q "$pat" "$tmp/err"; then
    echo "FAIL: '$*' gave status $rc, stderr:"; cat "$tmp/err"
    echo "(wanted status 1 and /$pat/)"; exit 1
  fi
}
cd "$tmp"
expect_fail '^frond: STORE_URI: .*built without PostgreSQL support' \
  "$frond" tag list --store postgresql://127.0.0.1:1/frond
expect_fail '^frond: STORE_URI: .*built without PostgreSQL support' \
  "$frond" tag list --store postgres://127.0.0.1:1/frond
expect_fail '^frond: STORE_URI: .*built without MySQL/MariaDB support' \
  "$frond" tag list --store mysql://127.0.0.1:1/frond
expect_fail '^frond: STORE_URI: .*built without MySQL/MariaDB support' \
  "$frond" tag list --store mariadb://127.0.0.1:1/frond
expect_fail '^frond: INVAL: .*built without ZooKeeper support' \
  "$frond" node list --coordinator zk://127.0.0.1:1/frond
expect_fail '^frond: INVAL: .*built without etcd support' \
  "$frond" node list --coordinator etcd://127.0.0.1:1/frond
expect_fail '^frond: INVAL: .*built without PostgreSQL support' \
  "$frond" node list --coordinator lease+postgresql://127.0.0.1:1/frond
expect_fail '^frond: INVAL: .*built without MySQL/MariaDB support' \
  "$frond" node list --coordinator lease+mysql://127.0.0.1:1/frond
# What is left works: the snowflake generator, SQLite stores and leases.
"$frond" tag create t --store "sqlite:$tmp/t.db" >/dev/null
"$frond" next --segment t --store "sqlite:$tmp/t.db" >/dev/null ||
  { echo "FAIL: the SQLite store does not work without PG and ZK"; exit 1; }
"$frond" next --node 3 --count 2 --data-dir "$tmp" --store "sqlite:$tmp/t.db" \
  >/dev/null ||
  { echo "FAIL: the snowflake generator does not work without PG and ZK"; exit 1; }
"$frond" node list --coordinator "lease+sqlite:$tmp/t.db" >/dev/null ||
  { echo "FAIL: the SQLite lease does not work without PG"; exit 1; }
echo "ok: libfrond and frond build without PostgreSQL, ZooKeeper, MySQL and etcd"
