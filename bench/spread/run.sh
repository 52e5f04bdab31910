#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Write-spreading layouts in a B-tree and across range shards, beside
# plain IDs in the same run (docs/formats.md#write-spreading-layouts).
#
#   bench/spread/run.sh [BUILD]     BUILD: where spread_gen is (build)
#   COUNT=10000000 USERS=100000     IDs of each kind, users of shard=4
#
# For each kind (plain snowflake IDs, decimal:reverse=yes,
# decimal:shard=4 with IDs of USERS users in turn) it makes COUNT IDs with
# build/spread_gen, inserts them in the order issued into a throwaway
# PostgreSQL (127.0.0.1, a temp dir: scripts/pg.sh) as the primary key of
# an empty table (`id bigint primary key`, COPY), and reports:
#
#   insert s        wall time of the COPY (index maintenance included)
#   index MB        pg_relation_size of the primary key's index
#   leaf pages      pgstatindex: leaf pages, and their average density
#                   (a time-ordered key fills each leaf before the next:
#                   ~90%; a key that lands anywhere splits pages half full)
#   shard max/mean  16 range shards of the 63-bit key space (the top four
#                   bits: how a range-sharded database splits it); the
#                   busiest shard's share of the last 10% of the inserts
#                   over the mean (1.00: every shard takes as many writes;
#                   16.00: one shard takes them all)
#
# and each figure's ratio to plain IDs. The server's data is removed
# afterwards.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
COUNT=${COUNT:-10000000}
USERS=${USERS:-100000}
gen=$build/spread_gen
[ -x "$gen" ] || {
  echo "bench/spread/run.sh: no $gen (make first)" >&2
  exit 1
}
tmp=$(mktemp -d)
chmod 755 "$tmp" # the postgres user (pg.sh as root) enters it
pgdir=
cleanup() {
  [ -z "$pgdir" ] || "$here/scripts/pg.sh" stop "$pgdir" >/dev/null 2>&1 || :
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# A key file of throwaway keys: the shard hash is keyed.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/keys"
echo >>"$tmp/keys"
chmod 600 "$tmp/keys"

pgdir=$tmp/pg
mkdir -p "$pgdir"
uri=$("$here/scripts/pg.sh" start "$pgdir")
psql -qAtX -v ON_ERROR_STOP=1 "$uri" -c 'CREATE EXTENSION pgstattuple' >/dev/null

now() { date +%s.%N; }

echo "bench/spread: $COUNT IDs of each kind, shard=4 over $USERS users"
echo
echo '| kind | insert s | index MB | leaf pages | leaf density | shard max/mean |'
echo '| --- | --- | --- | --- | --- | --- |'
for kind in plain reverse shard; do
  "$gen" "$kind" "$COUNT" "$USERS" "$tmp/keys" >"$tmp/ids"
  psql -qAtX -v ON_ERROR_STOP=1 "$uri" \
    -c "CREATE TABLE t_$kind (id bigint PRIMARY KEY)" >/dev/null
  t0=$(now)
  psql -qAtX -v ON_ERROR_STOP=1 "$uri" \
    -c "\\copy t_$kind (id) FROM '$tmp/ids'" >/dev/null
  t1=$(now)
  stats=$(psql -qAtX -F' ' -v ON_ERROR_STOP=1 "$uri" -c \
    "SELECT pg_relation_size('t_${kind}_pkey'), leaf_pages, avg_leaf_density
       FROM pgstatindex('t_${kind}_pkey')")
  # The last 10% of the inserts, by range shard (top 4 of 63 bits).
  balance=$(tail -n "$((COUNT / 10 > 0 ? COUNT / 10 : 1))" "$tmp/ids" |
    awk '{ n[int($1 / 576460752303423488)]++; t++ }
         END { m = 0; for (s in n) if (n[s] > m) m = n[s];
               printf "%.2f", m / (t / 16) }')
  echo "$kind $(echo "$t1 $t0" | awk '{ printf "%.2f", $1 - $2 }') $stats $balance" \
    >>"$tmp/rows"
  psql -qAtX "$uri" -c "DROP TABLE t_$kind" >/dev/null
done
awk 'NR == 1 { t = $2; s = $3; l = $4; d = $5; b = $6 }
     { printf "| %s | %.2f (%.2fx) | %.1f (%.2fx) | %d (%.2fx) | %.1f%% | %.2f (%.2fx) |\n",
         $1, $2, $2 / t, $3 / 1048576, $3 / s, $4, $4 / l, $5, $6, $6 / b }' \
  "$tmp/rows"
