#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# frond_seg_tag_next on a frond:// tag (ranges leased from a Frond server)
# beside the same on a SQLite tag and a bare atomic add, in one run, and
# the server's HTTP requests per million IDs.
#
#   bench/frond/run.sh [BUILD]      BUILD: a release build (default build)
#   REPS=7                          rounds of 50 million IDs each
#
# Starts `frond serve` from BUILD on a free loopback port in a temp dir
# (its own SQLite store), creates the tag there and in a second SQLite
# file, runs BUILD/bench_frond on both, then reads the requests the
# server counted (frond_http_requests_total) to give server calls per
# million IDs, every request of the run included (the allocator's open,
# its tag list, the warm-up). Everything lives in the temp dir.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
REPS=${REPS:-7}
. "$here/bench/lib.sh"
for b in frond bench_frond; do
  [ -x "$build/$b" ] || {
    echo "bench/frond/run.sh: no $build/$b (make first)" >&2
    exit 1
  }
done
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || :
  [ -z "$pid" ] || wait "$pid" 2>/dev/null || :
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

port=$(free_port)
"$build/frond" tag create bench --step 1000 --store "sqlite://$tmp/server.db" >/dev/null
"$build/frond" tag create bench --step 1000 --store "sqlite://$tmp/local.db" >/dev/null
"$build/frond" serve --listen "127.0.0.1:$port" --resp-listen off \
  --store "sqlite://$tmp/server.db" --data-dir "$tmp" --threads 1 \
  >"$tmp/server.log" 2>&1 &
pid=$!
wait_http "$port" /livez

requests() {
  curl -s "http://127.0.0.1:$port/metrics" |
    awk '/^frond_http_requests_total/ { n += $NF } END { printf "%d\n", n }'
}
before=$(requests)
rc=0
out=$("$build/bench_frond" "frond://127.0.0.1:$port" "sqlite://$tmp/local.db" bench "$REPS") || rc=$?
after=$(requests)
echo "$out"
[ "$rc" -eq 0 ] || {
  echo "bench/frond/run.sh: bench_frond failed ($rc)" >&2
  exit 1
}
ids=$(echo "$out" | awk '/IDs taken in all/ { print $NF }')
# The /metrics read of "before" is counted in "after": take it off.
calls=$((after - before - 1))
awk -v c="$calls" -v n="$ids" 'BEGIN {
  printf "server: %d HTTP requests for %d IDs = %.2f per million IDs\n",
    c, n, c * 1e6 / n }'
