#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/instr/run.sh -- instructions per request, counted by callgrind:
# the cost of a request in the server's own process (frond, libuv, libc;
# not the kernel), which another process's load cannot disturb (unlike
# req/s and latency).
#
#   bench/instr/run.sh path/to/reference/frond
#
# Runs `frond serve` (one event loop) under valgrind --tool=callgrind and
# sends it the same requests twice, N1 and then N2 of them (two runs of
# the server); the instructions per request are the difference of the two
# totals divided by N2 - N1, so that start-up, shutdown and anything else
# paid once cancel out. Each case runs on this tree's build and on the
# reference (the previous release, or a build of main), and the table
# shows both and their ratio.
# Environment: N1 (2000), N2 (12000), FROND (the binary measured; default:
# build the release and use build/frond), FLAGS (more `frond serve` flags
# for the measured binary only: the same binary as reference with FLAGS
# measures what a setting costs, e.g. FLAGS="--audit-log /tmp/a.log"; SERVE_ARGS is
# the same). Needs valgrind, ab (apache2-utils) and redis-benchmark (redis-tools).
#
# The cases: snowflake  GET /api/snowflake/get/x, keep-alive (ab -k)
#            segment    GET /v1/segment/bench (ab -k)
#            resp-incr  INCR bench (redis-benchmark -P 1)
#            resp-sf    ID.SNOWFLAKE 10 (redis-benchmark -P 1)
set -euf
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || {
  echo "usage: bench/instr/run.sh path/to/reference/frond" >&2
  exit 2
}
REF=$1
N1=${N1:-2000}
N2=${N2:-12000}
for p in valgrind ab redis-benchmark; do
  command -v $p >/dev/null || {
    echo "run.sh: $p is not installed (scripts/deps.sh test)" >&2
    exit 1
  }
done
if [ -z "${FROND:-}" ]; then
  make -s build >/dev/null
  FROND=build/frond
fi
FROND=$(cd "$(dirname "$FROND")" && pwd)/$(basename "$FROND")
REF=$(cd "$(dirname "$REF")" && pwd)/$(basename "$REF")

tmp=$(mktemp -d /tmp/frond-instr.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Total instructions of one server run answering n requests of case $2.
total() { # binary case n [flags]
  bin=$1 case=$2 n=$3 flags=${4:-}
  d=$tmp/run
  rm -rf "$d" && mkdir -p "$d"
  "$bin" tag create bench --step 1000000 --store "sqlite:///$d/f.db" >/dev/null
  hp=$(free_port) rp=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$d/out" \
    "$bin" serve --threads 1 --listen "127.0.0.1:$hp" \
    --resp-listen "127.0.0.1:$rp" --store "sqlite:///$d/f.db" \
    --data-dir "$d" $flags >"$d/log" 2>&1 &
  pid=$!
  i=0
  until curl -s -o /dev/null "http://127.0.0.1:$hp/livez" &&
    redis-cli -p "$rp" PING >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$d/log" >&2; exit 1; }
    sleep 0.1
  done
  # The first request of a tag loads its segment: not part of the cost.
  curl -s -o /dev/null "http://127.0.0.1:$hp/v1/segment/bench"
  case $case in
  snowflake) ab -q -k -n "$n" -c 1 "http://127.0.0.1:$hp/api/snowflake/get/x" >/dev/null ;;
  segment) ab -q -k -n "$n" -c 1 "http://127.0.0.1:$hp/v1/segment/bench" >/dev/null ;;
  # (redis-benchmark warns that CONFIG GET save is not answered: Frond
  # has no such key.)
  resp-incr) redis-benchmark -p "$rp" -n "$n" -c 1 -q INCR bench >/dev/null 2>&1 ;;
  resp-sf) redis-benchmark -p "$rp" -n "$n" -c 1 -q ID.SNOWFLAKE 10 >/dev/null 2>&1 ;;
  esac
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  ir=$(sed -n 's/^summary: //p' "$d/out")
  case $ir in
  '' | *[!0-9]*) echo "run.sh: no instruction count from callgrind" >&2; exit 1 ;;
  esac
  echo "$ir"
}

per_request() { # binary case [flags]
  a=$(total "$1" "$2" "$N1" "${3:-}")
  b=$(total "$1" "$2" "$N2" "${3:-}")
  echo $(((b - a) / (N2 - N1)))
}

echo "instructions per request (callgrind), (Ir(N2) - Ir(N1)) / (N2 - N1), N1=$N1 N2=$N2, one event loop"
printf '%-10s %12s %12s %7s\n' case frond reference ratio
for c in snowflake segment resp-incr resp-sf; do
  f=$(per_request "$FROND" $c "${FLAGS:-${SERVE_ARGS:-}}")
  r=$(per_request "$REF" $c)
  printf '%-10s %12s %12s %7s\n' $c "$f" "$r" \
    "$(python3 -c "print('%.3f' % ($f / $r))")"
done
