#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A throwaway PostgreSQL for tests and benchmarks, on 127.0.0.1 only.
#
#   scripts/pg.sh start DIR      initdb in DIR (first time), start on a free
#                                port (the same port again on a restart) and
#                                print the connection URI on stdout
#   scripts/pg.sh stop DIR       stop it (fast shutdown); the data stays
#   scripts/pg.sh uri DIR        print the URI again
#   scripts/pg.sh delay URI MS   make every UPDATE of leaf_alloc sleep MS
#                                milliseconds (a slow store); MS=0 removes it
#   scripts/pg.sh standby PRIMARY DIR [sync|async]
#                                a streaming standby of the server in
#                                PRIMARY (running), in DIR on a free port;
#                                sync (the default): the primary's commits
#                                wait for it (synchronous_standby_names);
#                                prints the standby's URI
#   scripts/pg.sh promote DIR    make the standby in DIR the primary
#   scripts/pg.sh kill DIR       kill -9 the server (a crash); data stays
#
# As root, the server runs as the unprivileged `postgres` user, which owns
# DIR. Authentication is "trust": loopback only, never for real data.
set -eu

die() {
  echo "scripts/pg.sh: $*" >&2
  exit 1
}

bindir=
for d in "${PG_BINDIR:-}" $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then
    bindir=$d
    break
  fi
done

# Run a PostgreSQL program as the server's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

uri_of() {
  echo "postgresql://postgres@127.0.0.1:$(cat "$1/port")/postgres"
}

# Start the server in $1 (initialised) on its port, or a free one.
start_server() {
  [ -f "$1/port" ] || free_port >"$1/port"
  tries=0
  until as_owner "$bindir/pg_ctl" -D "$1/data" -l "$1/server.log" -w \
    -t 60 -o "-p $(cat "$1/port") -k $1 -c listen_addresses=127.0.0.1" \
    start >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ $tries -lt 5 ] || die "the server does not start; see $1/server.log"
    free_port >"$1/port" # the port was taken meanwhile: try another
  done
}

# Run SQL on the server in $1 as postgres.
psql_on() {
  "$bindir/psql" -X -q -tA -v ON_ERROR_STOP=1 -d "$(uri_of "$1")" -c "$2"
}

cmd=${1:-}
case "$cmd" in
start)
  [ $# -eq 2 ] || die "usage: scripts/pg.sh start DIR"
  [ -n "$bindir" ] || die "PostgreSQL is not installed (Debian package postgresql; scripts/deps.sh test installs it)"
  dir=$(cd "$2" 2>/dev/null && pwd) || die "no directory $2"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a postgres user"
    chown postgres "$dir"
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
      --no-sync >"$dir/initdb.log" 2>&1 ||
      die "initdb failed; see $dir/initdb.log"
  fi
  start_server "$dir"
  uri_of "$dir"
  ;;
standby)
  [ $# -ge 3 ] || die "usage: scripts/pg.sh standby PRIMARY DIR [sync|async]"
  [ -n "$bindir" ] || die "PostgreSQL is not installed"
  primary=$(cd "$2" 2>/dev/null && pwd) || die "no directory $2"
  dir=$(cd "$3" 2>/dev/null && pwd) || die "no directory $3"
  mode=${4:-sync}
  case "$mode" in sync | async) ;; *) die "sync or async, not $mode" ;; esac
  [ "$(id -u)" != 0 ] || chown postgres "$dir"
  # -R: standby.signal and primary_conninfo, with the name the primary's
  # synchronous_standby_names waits for.
  as_owner "$bindir/pg_basebackup" -D "$dir/data" -R -X stream --no-sync \
    -d "host=127.0.0.1 port=$(cat "$primary/port") user=postgres application_name=frond_standby" \
    >"$dir/basebackup.log" 2>&1 || die "pg_basebackup failed; see $dir/basebackup.log"
  start_server "$dir"
  if [ "$mode" = sync ]; then
    psql_on "$primary" "ALTER SYSTEM SET synchronous_standby_names = 'frond_standby'" >/dev/null
    psql_on "$primary" "SELECT pg_reload_conf()" >/dev/null
  fi
  # Until it streams (and, sync, is the synchronous one): at most 60 s.
  want=$([ "$mode" = sync ] && echo sync || echo async)
  i=0
  until [ "$(psql_on "$primary" "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'frond_standby' AND state = 'streaming'")" = "$want" ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || die "the standby does not stream; see $dir/server.log"
    sleep 0.1
  done
  uri_of "$dir"
  ;;
promote)
  [ $# -eq 2 ] || die "usage: scripts/pg.sh promote DIR"
  as_owner "$bindir/pg_ctl" -D "$2/data" -w -t 60 promote >/dev/null
  ;;
kill)
  [ $# -eq 2 ] || die "usage: scripts/pg.sh kill DIR"
  [ -f "$2/data/postmaster.pid" ] || exit 0
  pid=$(head -n 1 "$2/data/postmaster.pid")
  # The backends too, as a crash of the machine would: none may go on
  # answering on its own.
  kill -9 "$pid" $(ps -o pid= --ppid "$pid") 2>/dev/null || :
  i=0
  while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 600 ] || die "the server does not die"
    sleep 0.1
  done
  ;;
stop)
  [ $# -eq 2 ] || die "usage: scripts/pg.sh stop DIR"
  [ -n "$bindir" ] || die "PostgreSQL is not installed"
  [ -f "$2/data/postmaster.pid" ] || exit 0
  kill -0 "$(head -n 1 "$2/data/postmaster.pid")" 2>/dev/null || exit 0 # killed
  as_owner "$bindir/pg_ctl" -D "$2/data" -m fast -w -t 60 stop >/dev/null
  ;;
uri)
  [ $# -eq 2 ] || die "usage: scripts/pg.sh uri DIR"
  uri_of "$2"
  ;;
delay)
  [ $# -eq 3 ] || die "usage: scripts/pg.sh delay URI MS"
  ms=$3
  case "$ms" in '' | *[!0-9]*) die "MS must be a number" ;; esac
  table="CREATE TABLE IF NOT EXISTS leaf_alloc (
    biz_tag varchar(128) NOT NULL DEFAULT '' PRIMARY KEY,
    max_id bigint NOT NULL DEFAULT 1, step int NOT NULL,
    description varchar(256) DEFAULT NULL,
    update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP);"
  if [ "$ms" -eq 0 ]; then
    sql="DROP TRIGGER IF EXISTS frond_delay ON leaf_alloc;"
  else
    sql="CREATE OR REPLACE FUNCTION frond_delay() RETURNS trigger AS
      \$\$ BEGIN PERFORM pg_sleep($ms / 1000.0); RETURN NEW; END \$\$
      LANGUAGE plpgsql;
      DROP TRIGGER IF EXISTS frond_delay ON leaf_alloc;
      CREATE TRIGGER frond_delay BEFORE UPDATE ON leaf_alloc
      FOR EACH ROW EXECUTE FUNCTION frond_delay();"
  fi
  "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -d "$2" -c "$table" -c "$sql" \
    >/dev/null 2>&1 || die "psql failed on $2"
  ;;
*)
  die "usage: scripts/pg.sh start|stop|uri|promote|kill DIR, standby PRIMARY DIR [sync|async], or delay URI MS"
  ;;
esac
