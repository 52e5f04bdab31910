#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/resp/run.sh -- redis-benchmark against Frond's `INCR <tag>` and, in
# the same run with the same settings, against redis-server doing INCR.
#
#   bench/resp/run.sh [path/to/frond]
#
# Both servers run on loopback in a temp dir and are stopped afterwards;
# Redis without persistence (--save '' --appendonly no), Frond with a
# SQLite store and one tag. Each (server, pipeline depth) pair is measured
# ROUNDS times, alternating servers; the table shows the median run by
# req/s. Environment: N (requests, 200000), C (clients, 50), PIPES ("1 16"),
# ROUNDS (3), THREADS (Frond's event loops, 1: one loop like Redis; 0: one
# per core, as the server starts by default), STEP (the tag's step,
# 100000). One loop by default: redis-benchmark runs on the same machine,
# and on a small one a second loop takes CPU from the load generator.
# Without a binary given, it builds the release (make) and uses build/frond.
set -eu
cd "$(dirname "$0")/../.."
if [ -z "${1:-}${FROND_BIN:-}" ]; then
  make -s build >/dev/null
fi
FROND=${1:-${FROND_BIN:-build/frond}}
N=${N:-200000}
C=${C:-50}
PIPES=${PIPES:-"1 16"}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1}
STEP=${STEP:-100000}

for p in redis-benchmark redis-server redis-cli; do
  command -v $p >/dev/null || {
    echo "run.sh: $p is not installed (redis-tools, redis-server)" >&2
    exit 1
  }
done
[ -x "$FROND" ] || { echo "run.sh: no frond binary at $FROND" >&2; exit 1; }
FROND=$(cd "$(dirname "$FROND")" && pwd)/$(basename "$FROND")

# shellcheck source=bench/lib.sh
. bench/lib.sh

dir=$(mktemp -d "${TMPDIR:-/tmp}/frond-bench-resp.XXXXXX")
fpid='' rpid=''
cleanup() {
  [ -n "$fpid" ] && kill "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null
  [ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

fport=$(free_port)
hport=$(free_port)
rport=$(free_port)
store="sqlite://$dir/frond.db"
"$FROND" tag create bench --step "$STEP" --store "$store" >/dev/null
"$FROND" serve --listen "127.0.0.1:$hport" --resp-listen "127.0.0.1:$fport" \
  --store "$store" --data-dir "$dir" --threads "$THREADS" \
  --log-level warn 2>"$dir/frond.log" &
fpid=$!
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --daemonize no --loglevel warning >"$dir/redis.log" 2>&1 &
rpid=$!
for port in $fport $rport; do
  i=0
  until redis-cli -p "$port" PING >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "run.sh: nothing answers on $port" >&2; exit 1; }
    sleep 0.1
  done
done

# One measurement: "rps p50 p95 p99 max" from redis-benchmark's CSV line.
measure() {
  redis-benchmark -h 127.0.0.1 -p "$1" -c "$C" -n "$N" -P "$2" --csv \
    INCR bench 2>/dev/null | tail -1 | tr -d '"' |
    awk -F, '{ print $2, $5, $6, $7, $8 }'
}

# Median line (by req/s) of the lines on stdin.
median() {
  sort -n | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}

cores=$(nproc)
echo "redis-benchmark -c $C -n $N, INCR bench; median of $ROUNDS runs;" \
  "$cores cores; frond threads=$THREADS (0 = cores), step $STEP;" \
  "$(redis-server --version | awk '{print $1, $2, $3}')"
printf '%-3s %-6s %12s %9s %9s %9s %9s %7s\n' P server 'req/s' 'p50 ms' \
  'p95 ms' 'p99 ms' 'max ms' ratio
for P in $PIPES; do
  : >"$dir/f" && : >"$dir/r"
  r=0
  while [ $r -lt "$ROUNDS" ]; do
    measure "$rport" "$P" >>"$dir/r"
    measure "$fport" "$P" >>"$dir/f"
    r=$((r + 1))
  done
  rl=$(median <"$dir/r")
  fl=$(median <"$dir/f")
  echo "$rl" | awk -v P="$P" '{ printf "%-3s %-6s %12.0f %9s %9s %9s %9s %7s\n",
    P, "redis", $1, $2, $3, $4, $5, "1.00" }'
  echo "$fl $rl" | awk -v P="$P" '{ printf "%-3s %-6s %12.0f %9s %9s %9s %9s %7.2f\n",
    P, "frond", $1, $2, $3, $4, $5, $1 / $6 }'
done
# Frond answered every INCR: the tag moved by at least all requests.
last=$(redis-cli -p "$fport" INCR bench)
total=$(( $(echo "$PIPES" | wc -w) * ROUNDS * N ))
[ "$last" -gt "$total" ] || { echo "run.sh: INCR bench is $last after $total requests" >&2; exit 1; }
