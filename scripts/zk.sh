#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Start or stop a throwaway standalone ZooKeeper on 127.0.0.1 for tests.
#   scripts/zk.sh start DIR   create DIR, start ZooKeeper on a free port,
#                             wait until it answers, print host:port
#   scripts/zk.sh stop DIR    stop it (SIGTERM, then SIGKILL) and keep DIR
# Environment: ZK_TICK_MS (default 200: sessions may be as short as
# 2 ticks), ZK_PORT (default: a free port), JAVA (default: java).
# Works as root: nothing is written outside DIR.
set -eu
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: scripts/zk.sh start|stop DIR" >&2
  exit 2
fi
jar=/usr/share/java/zookeeper.jar
java=${JAVA:-java}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

case "$cmd" in
start)
  [ -f "$jar" ] || {
    echo "scripts/zk.sh: $jar missing (Debian package zookeeper)" >&2
    exit 1
  }
  command -v "$java" >/dev/null || {
    echo "scripts/zk.sh: java missing (Debian package default-jre-headless)" >&2
    exit 1
  }
  mkdir -p "$dir/data"
  port=${ZK_PORT:-$(free_port)}
  tick=${ZK_TICK_MS:-200}
  cat >"$dir/zoo.cfg" <<CFG
tickTime=$tick
dataDir=$dir/data
clientPortAddress=127.0.0.1
clientPort=$port
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
CFG
  cat >"$dir/log4j.properties" <<CFG
log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=$dir/zookeeper.log
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d %p %c{1}: %m%n
CFG
  "$java" -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dzookeeper.log.dir="$dir" -Dlog4j.configuration="file:$dir/log4j.properties" \
    -cp "$dir:$jar" org.apache.zookeeper.server.ZooKeeperServerMain \
    "$dir/zoo.cfg" >"$dir/stdout.log" 2>&1 &
  echo $! >"$dir/pid"
  echo "127.0.0.1:$port" >"$dir/address"
  # Ready when it answers "ruok" with "imok" (bounded: 60 s).
  i=0
  while [ $i -lt 600 ]; do
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "scripts/zk.sh: ZooKeeper exited; see $dir/stdout.log" >&2
      exit 1
    fi
    ok=$(python3 -c "
import socket,sys
try:
    s=socket.create_connection(('127.0.0.1',$port),0.5); s.sendall(b'ruok')
    print(s.recv(8).decode())
except OSError: pass" 2>/dev/null || true)
    [ "$ok" = imok ] && { echo "127.0.0.1:$port"; exit 0; }
    sleep 0.1
    i=$((i + 1))
  done
  echo "scripts/zk.sh: ZooKeeper not ready after 60 s; see $dir/stdout.log" >&2
  exit 1
  ;;
stop)
  [ -f "$dir/pid" ] || exit 0
  pid=$(cat "$dir/pid")
  kill -CONT "$pid" 2>/dev/null || true
  kill "$pid" 2>/dev/null || true
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
  ;;
*)
  echo "usage: scripts/zk.sh start|stop DIR" >&2
  exit 2
  ;;
esac
