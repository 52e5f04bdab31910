#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Segment allocations per second per engine, beside the database's own
# load tool running the same statements on the same server in the same
# run: the store layer's overhead over the bare SQL.
#
#   bench/store/run.sh [BUILD]      BUILD: where bench_store is (build)
#   ALLOCS=2000 REPS=5              allocations per round, rounds
#
# For each engine it starts a throwaway server in a temp dir (scripts/),
# runs build/bench_store (one connection, one allocation at a time, as the
# allocator's loader) and the reference in alternating rounds, and prints
# a table of the medians:
#
#   postgresql   pgbench -M prepared -c 1 -t ALLOCS with the UPDATE ...
#                RETURNING that Frond sends (one statement, autocommit)
#   mysql        mariadb-slap, one client, ALLOCS times Frond's transaction
#                START TRANSACTION; UPDATE; SELECT; COMMIT (text protocol:
#                mariadb-slap cannot prepare)
#   sqlite       the sqlite3 shell, ALLOCS times the UPDATE ... RETURNING
#                in WAL mode with synchronous=FULL, as Frond; its time
#                includes starting the shell once
#
# Every server's data lives in the temp dir and is removed afterwards.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
ALLOCS=${ALLOCS:-2000}
REPS=${REPS:-5}
bin=$build/bench_store
[ -x "$bin" ] || {
  echo "bench/store/run.sh: no $bin (make first)" >&2
  exit 1
}
tmp=$(mktemp -d)
chmod 755 "$tmp" # the postgres user (pg.sh as root) enters it
pgdir=
mydir=
cleanup() {
  [ -z "$pgdir" ] || "$here/scripts/pg.sh" stop "$pgdir" >/dev/null 2>&1 || :
  [ -z "$mydir" ] || "$here/scripts/mariadb.sh" stop "$mydir" >/dev/null 2>&1 || :
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

TAG=bench_store
WRITE="UPDATE leaf_alloc SET max_id = max_id + step, update_time = CURRENT_TIMESTAMP WHERE biz_tag = '$TAG' AND max_id <= 9223372036854775807 - step"

median() { # numbers on stdin, one per line
  sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# Frond's round and the reference's, alternating (the machine's load
# moves both alike): "frond-rate ref-rate" per line.
rounds() { # URI, the reference's command (prints allocations per second)
  for i in $(seq "$REPS"); do
    echo "$("$bin" "$1" "$ALLOCS" 1 | awk '$1 == "median" { print $2 }')" \
      "$(eval "$2")"
  done >"$tmp/rounds"
  f=$(cut -d' ' -f1 "$tmp/rounds" | median)
  r=$(cut -d' ' -f2 "$tmp/rounds" | median)
}

# Seconds a command takes, to the microsecond.
now() { date +%s.%N; }

row() { # engine, frond's rate, the reference's rate, the reference's name
  printf '| %s | %.0f | %.0f | %.2f | %s |\n' "$1" "$2" "$3" \
    "$(echo "$2 $3" | awk '{ print $1 / $2 }')" "$4"
}

echo "store allocations per second, one connection, medians of $REPS rounds of $ALLOCS"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| engine | frond allocs/s | reference allocs/s | frond/ref | reference |"
echo "| --- | ---: | ---: | ---: | --- |"

# PostgreSQL.
pgdir=$tmp/pg
mkdir "$pgdir"
uri=$("$here/scripts/pg.sh" start "$pgdir")
"$bin" "$uri" 1 1 >/dev/null # the table and the tag
echo "$WRITE RETURNING max_id, step;" >"$tmp/pg.sql"
pg_ref() {
  pgbench -n -M prepared -c 1 -t "$ALLOCS" -f "$tmp/pg.sql" "$uri" 2>/dev/null |
    awk '/^tps = / { print $3 }'
}
rounds "$uri" pg_ref
row postgresql "$f" "$r" "pgbench -M prepared, UPDATE ... RETURNING"
"$here/scripts/pg.sh" stop "$pgdir" >/dev/null
pgdir=

# MariaDB.
mydir=$tmp/my
mkdir "$mydir"
uri=$("$here/scripts/mariadb.sh" start "$mydir")
"$bin" "$uri" 1 1 >/dev/null
awk -v n="$ALLOCS" -v w="$WRITE" -v t="$TAG" 'BEGIN {
  for (i = 0; i < n; i++)
    printf "START TRANSACTION;%s;SELECT max_id, step FROM leaf_alloc WHERE biz_tag = '\''%s'\'';COMMIT;\n", w, t
}' >"$tmp/my.sql"
my_ref() {
  mariadb-slap --no-defaults --protocol=tcp --host=127.0.0.1 \
    --port="$(cat "$mydir/port")" --user=root \
    --create-schema=frond --concurrency=1 --iterations=1 --delimiter=';' \
    --query="$tmp/my.sql" 2>/dev/null |
    awk -v n="$ALLOCS" '/Average number of seconds/ { print n / $(NF - 1) }'
}
rounds "$uri" my_ref
row mysql "$f" "$r" "mariadb-slap, START TRANSACTION; UPDATE; SELECT; COMMIT"
"$here/scripts/mariadb.sh" stop "$mydir" >/dev/null
mydir=

# SQLite.
db=$tmp/bench.db
"$bin" "sqlite://$db" 1 1 >/dev/null
{
  echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
  awk -v n="$ALLOCS" -v w="$WRITE" 'BEGIN {
    for (i = 0; i < n; i++) printf "%s RETURNING max_id, step;\n", w }'
} >"$tmp/lite.sql"
lite_ref() {
  t0=$(now)
  sqlite3 "$db" <"$tmp/lite.sql" >/dev/null
  echo "$t0 $(now)" | awk -v n="$ALLOCS" '{ print n / ($2 - $1) }'
}
rounds "sqlite://$db" lite_ref
row sqlite "$f" "$r" "sqlite3 shell, UPDATE ... RETURNING, WAL, synchronous=FULL"
