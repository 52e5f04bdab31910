#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/quota/run.sh -- what quotas cost on the request path: frond serve
# without a rule, with exact rules, and with patterns, side by side, same
# wrk, interleaved.
#
#   bench/quota/run.sh           (from the source tree; builds build/frond)
#
# Environment: WRK_ARGS (default "-t1 -c64 -d5s"), ROUNDS (default 3: the
# whole sequence runs this many times, and each number is the median over
# rounds), THREADS (frond's event-loop threads, default 1: the load
# generator needs the other core of a 2-core machine), FROND (a frond
# binary to use instead of building), BASE (optionally, a frond binary
# built without quotas, for a row "base" that shows what the one branch of
# a server without rules costs).
#
# Servers, on 127.0.0.1, each with the tag bench:
#   none     no quota rule: the request path's one branch
#   exact    quota_client = anonymous=R/B, quota_tag = bench=R/B
#   pattern  quota_client = *=R/B, quota_tag = *=R/B (a name's bucket
#            found by its hash in the table)
# with R and B so large that nothing is refused, so that every request
# takes from its buckets and is served. Requests:
#   snowflake  GET /api/snowflake/get/bench   (one ID: a client bucket)
#   segment    GET /api/segment/get/bench     (one ID: client and tag)
#   seg-batch  GET /v1/segment/bench?count=1000&as=text
# Prints req/s, IDs/s, p50/p99/p99.9 (medians over rounds) and each row's
# ratio to the same request on the server without rules.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)
WRK_ARGS=${WRK_ARGS:--t1 -c64 -d5s}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
if [ -z "${FROND:-}" ]; then
  make -s build >/dev/null
  FROND=$src/build/frond
fi

tmp=$(mktemp -d /tmp/frond-bench.XXXXXX)
pids=''
cleanup() {
  for p in $pids; do
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"

R=1000000000
B=1000000000000
# start NAME BINARY [FLAGS...]: a server in its own directory and store.
start() {
  name=$1 bin=$2
  shift 2
  mkdir "$tmp/$name"
  store="sqlite:///$tmp/$name/frond.db"
  "$bin" tag create bench --step 100000000 --store "$store" >/dev/null
  port=$(free_port)
  "$bin" serve --listen "127.0.0.1:$port" --store "$store" \
    --data-dir "$tmp/$name" --threads "$THREADS" --resp-listen off \
    --log-level warn "$@" 2>"$tmp/$name.log" &
  pids="$pids $!"
  wait_http "$port"
  curl -sf "http://127.0.0.1:$port/api/segment/get/bench" >/dev/null
  eval "port_$name=$port"
}
servers="none exact pattern"
start none "$FROND"
start exact "$FROND" --quota-client "anonymous=$R/$B" --quota-tag "bench=$R/$B"
start pattern "$FROND" --quota-client "*=$R/$B" --quota-tag "*=$R/$B"
if [ -n "${BASE:-}" ]; then
  start base "$BASE"
  servers="base $servers"
fi

results=$tmp/results
: >"$results"
run() { # name url ids-per-request
  # shellcheck disable=SC2086
  line=$(wrk $WRK_ARGS -s "$src/bench/http/report.lua" "$2" | grep '^RESULT')
  echo "$1 $3 $line" >>"$results"
  echo "  done: $1" >&2
}
echo "wrk $WRK_ARGS; frond threads=$THREADS; $(nproc) cores; $ROUNDS rounds" >&2
round=1
while [ "$round" -le "$ROUNDS" ]; do
  echo "round $round" >&2
  for s in $servers; do
    eval "p=\$port_$s"
    run "snowflake/$s" "http://127.0.0.1:$p/api/snowflake/get/bench" 1
    run "segment/$s" "http://127.0.0.1:$p/api/segment/get/bench" 1
    run "seg-batch/$s" "http://127.0.0.1:$p/v1/segment/bench?count=1000&as=text" 1000
  done
  round=$((round + 1))
done

awk "$WRK_MEDIANS"'
END {
  printf "| run | req/s | IDs/s | p50 | p99 | p99.9 | failed | req/s vs none | p99.9 vs none |\n";
  printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (i = 1; i <= n; i++) {
    x = order[i]; split(x, part, "/"); r = part[1] "/none";
    printf "| %s | %.0f | %.0f | %d us | %d us | %d us | %d | %.3f | %.2f |\n", x, median(x, "rps"), median(x, "idps"), median(x, "p50"), median(x, "p99"), median(x, "p999"), failed[x], median(x, "rps") / median(r, "rps"), median(x, "p999") / median(r, "p999");
  }
}' "$results"
