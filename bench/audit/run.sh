#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/audit/run.sh -- what the audit log costs: two Frond servers, one
# without audit_log and one with it, measured alternately with the same
# load in the same run; the ratio is audited / plain.
#
#   bench/audit/run.sh [path/to/frond]
#
# Loads (redis-benchmark on the RESP port; wrk on HTTP when installed):
#   INCR bench             single segment IDs (aggregated: a few lines a
#                          second per connection)
#   ID.SNOWFLAKE           single snowflake IDs (aggregated likewise)
#   ID.NEXT bench 100      batches of 100 segment IDs (a line each)
#   ID.RANGE bench 1000    range leases (a line each)
#   GET /v1/segment/bench  single IDs over HTTP (wrk)
# Both servers run on loopback in a temp dir with one event loop each
# (THREADS), a SQLite store and one tag; the audit log is in the same temp
# dir (put TMPDIR on the disk the log would use). Each (load, server) pair
# is measured ROUNDS times, alternating; the table shows the median run.
# Environment: N (requests, 200000), C (clients, 50), P (pipeline, 1),
# ROUNDS (3), THREADS (1), STEP (1000000), SECONDS (wrk, 5).
# Without a binary given, it builds the release (make) and uses build/frond.
set -eu
cd "$(dirname "$0")/../.."
if [ -z "${1:-}${FROND_BIN:-}" ]; then
  make -s build >/dev/null
fi
FROND=${1:-${FROND_BIN:-build/frond}}
N=${N:-200000}
C=${C:-50}
P=${P:-1}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1}
STEP=${STEP:-1000000}
SECONDS_WRK=${SECONDS:-5}

command -v redis-benchmark >/dev/null || {
  echo "run.sh: redis-benchmark is not installed (redis-tools)" >&2
  exit 1
}
[ -x "$FROND" ] || { echo "run.sh: no frond binary at $FROND" >&2; exit 1; }
FROND=$(cd "$(dirname "$FROND")" && pwd)/$(basename "$FROND")

# shellcheck source=bench/lib.sh
. bench/lib.sh

dir=$(mktemp -d "${TMPDIR:-/tmp}/frond-bench-audit.XXXXXX")
pids=''
cleanup() {
  for p in $pids; do
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# start NAME [FLAGS...]: a server with its own store; sets NAME_resp and
# NAME_http to its ports.
start() {
  name=$1
  shift
  mkdir "$dir/$name"
  store="sqlite://$dir/$name/frond.db"
  "$FROND" tag create bench --step "$STEP" --store "$store" >/dev/null
  rp=$(free_port)
  hp=$(free_port)
  "$FROND" serve --listen "127.0.0.1:$hp" --resp-listen "127.0.0.1:$rp" \
    --store "$store" --data-dir "$dir/$name" --threads "$THREADS" \
    --max-range 1000000 --log-level warn "$@" 2>"$dir/$name/frond.log" &
  pids="$pids $!"
  wait_http "$hp" /livez
  eval "${name}_resp=$rp ${name}_http=$hp"
}
start plain
start audited --audit-log "$dir/audited/audit.log"

# One measurement: requests per second.
measure() {
  port=$1
  shift
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$N" -P "$P" --csv \
    "$@" 2>/dev/null | tail -1 | tr -d '"' | awk -F, '{ print $2 }'
}
measure_http() {
  wrk -t1 -c"$C" -d"${SECONDS_WRK}s" "http://127.0.0.1:$1/v1/segment/bench" |
    awk '/Requests\/sec/ { print $2 }'
}
median() {
  sort -n | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}

row() {
  label=$1
  shift
  : >"$dir/p" && : >"$dir/a"
  r=0
  while [ $r -lt "$ROUNDS" ]; do
    "$@" plain >>"$dir/p"
    "$@" audited >>"$dir/a"
    r=$((r + 1))
  done
  pm=$(median <"$dir/p")
  am=$(median <"$dir/a")
  echo "$pm $am" | awk -v l="$label" \
    '{ printf "%-26s %12.0f %12.0f %7.2f\n", l, $1, $2, $2 / $1 }'
}
resp() {
  load=$1
  shift
  eval "port=\$${load}_resp"
  measure "$port" "$@"
}
incr() { resp "$1" INCR bench; }
flake() { resp "$1" ID.SNOWFLAKE; }
batch() { resp "$1" ID.NEXT bench 100; }
range() { resp "$1" ID.RANGE bench 1000; }
http() {
  eval "port=\$${1}_http"
  measure_http "$port"
}

echo "redis-benchmark -c $C -n $N -P $P; median of $ROUNDS runs;" \
  "$(nproc) cores; threads=$THREADS; audit log on $(df -P "$dir" |
    awk 'NR == 2 { print $1 }')"
printf '%-26s %12s %12s %7s\n' load 'plain req/s' 'audit req/s' ratio
row "INCR (single segment)" incr
row "ID.SNOWFLAKE (single)" flake
row "ID.NEXT bench 100 (batch)" batch
row "ID.RANGE bench 1000" range
if command -v wrk >/dev/null; then
  row "HTTP GET (single segment)" http
fi
# The audited server wrote what it served: its lines, and nothing lost.
eval "port=\$audited_http"
curl -s "http://127.0.0.1:$port/metrics" |
  awk '/^frond_audit_(records_total|bytes_total|dropped_total|refused_total|write_errors_total) / {
    printf "%s %s\n", $1, $2 }'
