#!/bin/sh
# A throwaway PostgreSQL for tests and benchmarks, on 127.0.0.1 only.
#
#   scripts/pg.sh start DIR      initdb in DIR (first time), start on a free
#                                port (the same port again on a restart) and
#                                print the connection URI on stdout
#   scripts/pg.sh stop DIR       stop it (fast shutdown); the data stays
#   scripts/pg.sh uri DIR        print the URI again
#   scripts/pg.sh delay URI MS   make every UPDATE of leaf_alloc sleep MS
#                                milliseconds (a slow store); MS=0 removes it
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
  [ -f "$dir/port" ] || free_port >"$dir/port"
  tries=0
  until as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -t 60 -o "-p $(cat "$dir/port") -k $dir -c listen_addresses=127.0.0.1" \
    start >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ $tries -lt 5 ] || die "the server does not start; see $dir/server.log"
    free_port >"$dir/port" # the port was taken meanwhile: try another
  done
  uri_of "$dir"
  ;;
stop)
  [ $# -eq 2 ] || die "usage: scripts/pg.sh stop DIR"
  [ -n "$bindir" ] || die "PostgreSQL is not installed"
  [ -f "$2/data/postmaster.pid" ] || exit 0
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
  die "usage: scripts/pg.sh start|stop|uri DIR, or delay URI MS"
  ;;
esac
