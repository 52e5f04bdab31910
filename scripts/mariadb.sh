#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A throwaway MariaDB for tests and benchmarks, on 127.0.0.1 only.
#
#   scripts/mariadb.sh start DIR     mariadb-install-db in DIR (first time),
#                                    start on a free port (the same port
#                                    again on a restart) and a unix socket
#                                    in DIR, create the database `frond`,
#                                    print the connection URI on stdout
#   scripts/mariadb.sh stop DIR      stop it (clean shutdown); the data stays
#   scripts/mariadb.sh kill DIR      kill -9 the server (a crash); data stays
#   scripts/mariadb.sh uri DIR       print the URI again
#   scripts/mariadb.sh socket DIR    print the unix socket's path
#   scripts/mariadb.sh sql DIR SQL   run SQL in the database `frond` as root
#                                    (tab-separated rows on stdout)
#   scripts/mariadb.sh delay DIR MS  make every UPDATE of leaf_alloc sleep
#                                    MS milliseconds (a slow store); MS=0
#                                    removes it
#   scripts/mariadb.sh replica PRIMARY DIR [semisync|async]
#                                    start a server in DIR replicating the
#                                    one in PRIMARY (running) from its first
#                                    binlog; semisync (the default): the
#                                    primary's commits wait for it
#                                    (AFTER_SYNC, a 10 min timeout); prints
#                                    the replica's URI
#   scripts/mariadb.sh promote DIR   the replica in DIR applies what it has
#                                    received, stops replicating and takes
#                                    writes (what failover tools do)
#
# Every server writes a binlog (server_id: its port), as production does.
#
# Root connects without a password, over TCP from 127.0.0.1 and over the
# socket: loopback only, never for real data. As root (uid 0) the server
# runs with --user=root: it lives in DIR and nowhere else. Every wait is
# bounded (60 s to start or stop).
set -eu

die() {
  echo "scripts/mariadb.sh: $*" >&2
  exit 1
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

uri_of() {
  echo "mysql://root@127.0.0.1:$(cat "$1/port")/frond"
}

client() {
  dir=$1
  shift
  mariadb --no-defaults --protocol=socket --socket="$dir/mysql.sock" \
    --user=root --connect-timeout=10 "$@"
}

alive() {
  [ -f "$1/mariadbd.pid" ] && kill -0 "$(cat "$1/mariadbd.pid")" 2>/dev/null
}

# Wait up to 60 s for the server in $1 to answer (0) or to die (1).
wait_up() {
  i=0
  while [ $i -lt 600 ]; do
    if client "$1" -e 'SELECT 1' >/dev/null 2>&1; then
      return 0
    fi
    if [ -f "$1/starting.pid" ] && ! kill -0 "$(cat "$1/starting.pid")" 2>/dev/null; then
      return 1
    fi
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

wait_gone() {
  i=0
  while [ $i -lt 600 ]; do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

cmd=${1:-}
case "$cmd" in
start)
  [ $# -eq 2 ] || die "usage: scripts/mariadb.sh start DIR"
  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] ||
    die "MariaDB is not installed (Debian package mariadb-server; scripts/deps.sh test installs it)"
  daemon=$(command -v mariadbd 2>/dev/null || echo /usr/sbin/mariadbd)
  dir=$(cd "$2" 2>/dev/null && pwd) || die "no directory $2"
  # The socket path must fit in sun_path (107 bytes).
  [ ${#dir} -lt 90 ] || die "directory path too long for a unix socket: $dir"
  user=
  [ "$(id -u)" = 0 ] && user=--user=root
  # Temporary files in DIR too: servers started side by side (tests run
  # in parallel) must not meet in /tmp.
  mkdir -p "$dir/tmp"
  if [ ! -d "$dir/data/mysql" ]; then
    mariadb-install-db --no-defaults $user --datadir="$dir/data" \
      --tmpdir="$dir/tmp" \
      --auth-root-authentication-method=normal --skip-test-db \
      >"$dir/install.log" 2>&1 || die "mariadb-install-db failed; see $dir/install.log"
  fi
  if alive "$dir"; then
    uri_of "$dir"
    exit 0
  fi
  [ -f "$dir/port" ] || free_port >"$dir/port"
  tries=0
  while :; do
    rm -f "$dir/mysql.sock"
    "$daemon" --no-defaults $user --datadir="$dir/data" \
      --port="$(cat "$dir/port")" --bind-address=127.0.0.1 \
      --tmpdir="$dir/tmp" \
      --socket="$dir/mysql.sock" --pid-file="$dir/mariadbd.pid" \
      --log-error="$dir/server.log" --skip-name-resolve \
      --innodb-buffer-pool-size=32M --max-connections=200 \
      --log-bin=binlog --server-id="$(cat "$dir/port")" \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
      </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/starting.pid"
    if wait_up "$dir"; then
      break
    fi
    kill -9 "$(cat "$dir/starting.pid")" 2>/dev/null || true
    tries=$((tries + 1))
    [ $tries -lt 5 ] || die "the server does not start; see $dir/server.log"
    free_port >"$dir/port" # the port was taken meanwhile: try another
  done
  rm -f "$dir/starting.pid"
  client "$dir" -e 'CREATE DATABASE IF NOT EXISTS frond' ||
    die "cannot create the database frond"
  uri_of "$dir"
  ;;
stop)
  [ $# -eq 2 ] || die "usage: scripts/mariadb.sh stop DIR"
  alive "$2" || exit 0
  pid=$(cat "$2/mariadbd.pid")
  kill -TERM "$pid"
  wait_gone "$pid" || die "the server (pid $pid) did not stop within 60 s"
  ;;
kill)
  [ $# -eq 2 ] || die "usage: scripts/mariadb.sh kill DIR"
  alive "$2" || exit 0
  pid=$(cat "$2/mariadbd.pid")
  kill -KILL "$pid"
  wait_gone "$pid" || die "the server (pid $pid) survived kill -9"
  ;;
uri)
  [ $# -eq 2 ] || die "usage: scripts/mariadb.sh uri DIR"
  uri_of "$2"
  ;;
socket)
  [ $# -eq 2 ] || die "usage: scripts/mariadb.sh socket DIR"
  echo "$(cd "$2" && pwd)/mysql.sock"
  ;;
sql)
  [ $# -eq 3 ] || die "usage: scripts/mariadb.sh sql DIR SQL"
  client "$2" --batch --skip-column-names frond -e "$3"
  ;;
delay)
  [ $# -eq 3 ] || die "usage: scripts/mariadb.sh delay DIR MS"
  ms=$3
  case "$ms" in '' | *[!0-9]*) die "MS must be a number" ;; esac
  # Leaf's table, as Frond creates it when missing (store.h).
  sql="CREATE TABLE IF NOT EXISTS leaf_alloc (
    biz_tag varchar(128) NOT NULL DEFAULT '', max_id bigint(20) NOT NULL DEFAULT '1',
    step int(11) NOT NULL, description varchar(256) DEFAULT NULL,
    update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
    PRIMARY KEY (biz_tag)) ENGINE=InnoDB;
    DROP TRIGGER IF EXISTS frond_delay;"
  if [ "$ms" -ne 0 ]; then
    sql="$sql CREATE TRIGGER frond_delay BEFORE UPDATE ON leaf_alloc
      FOR EACH ROW SET @frond_delay = SLEEP($ms / 1000);"
  fi
  client "$2" frond -e "$sql" || die "cannot set the delay"
  ;;
replica)
  [ $# -ge 3 ] || die "usage: scripts/mariadb.sh replica PRIMARY DIR [semisync|async]"
  primary=$2
  mode=${4:-semisync}
  case "$mode" in semisync | async) ;; *) die "semisync or async, not $mode" ;; esac
  alive "$primary" || die "no server running in $primary"
  "$0" start "$3" >/dev/null
  if [ "$mode" = semisync ]; then
    client "$primary" -e "SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC;
      SET GLOBAL rpl_semi_sync_master_timeout = 600000;
      SET GLOBAL rpl_semi_sync_master_enabled = ON" || die "semi-sync on $primary"
    client "$3" -e "SET GLOBAL rpl_semi_sync_slave_enabled = ON" ||
      die "semi-sync on $3"
  fi
  client "$3" -e "CHANGE MASTER TO MASTER_HOST = '127.0.0.1',
    MASTER_PORT = $(cat "$primary/port"), MASTER_USER = 'root',
    MASTER_LOG_FILE = 'binlog.000001', MASTER_LOG_POS = 4,
    MASTER_CONNECT_RETRY = 1; START SLAVE" || die "cannot start replicating"
  # Until both threads run (and, semisync, the primary counts the replica).
  i=0
  while :; do
    st=$(client "$3" -e 'SHOW SLAVE STATUS\G')
    if echo "$st" | grep -q 'Slave_IO_Running: Yes' &&
      echo "$st" | grep -q 'Slave_SQL_Running: Yes' &&
      { [ "$mode" = async ] ||
        [ "$(client "$primary" --batch --skip-column-names -e "SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'" | cut -f2)" = 1 ]; }; then
      break
    fi
    i=$((i + 1))
    [ $i -lt 600 ] || die "the replica does not replicate: $st"
    sleep 0.1
  done
  uri_of "$3"
  ;;
promote)
  [ $# -eq 2 ] || die "usage: scripts/mariadb.sh promote DIR"
  client "$2" -e "STOP SLAVE IO_THREAD; START SLAVE SQL_THREAD" ||
    die "cannot stop replicating"
  # Apply the relay log: until the SQL thread says it has read all of it.
  # Its position is no test: after a primary dies mid-transaction, the
  # relay log ends with events the SQL thread never applies, and the
  # position executed stays below the position read.
  i=0
  while :; do
    st=$(client "$2" -e 'SHOW SLAVE STATUS\G')
    echo "$st" | grep -q 'Slave_SQL_Running_State: Slave has read all relay log' &&
      break
    echo "$st" | grep -q 'Slave_SQL_Running: Yes' ||
      die "the replica's SQL thread stopped: $st"
    i=$((i + 1))
    [ $i -lt 600 ] || die "the relay log is not applied: $st"
    sleep 0.1
  done
  client "$2" -e "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF" ||
    die "cannot promote"
  ;;
*)
  die "usage: scripts/mariadb.sh start|stop|kill|uri|socket|promote DIR, sql DIR SQL, delay DIR MS, or replica PRIMARY DIR [semisync|async]"
  ;;
esac
