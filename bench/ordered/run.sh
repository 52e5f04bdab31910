#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/ordered/run.sh -- an ordered tag's IDs per second, through its
# owner and through another node that forwards to it, beside a plain
# tag's on the owner, same wrk, same run.
#
#   bench/ordered/run.sh         (from the source tree; builds build/frond)
#
# Environment: WRK_ARGS (default "-t1 -c64 -d5s"), ROUNDS (default 3: the
# sequence runs this many times, interleaved; each number is the median
# over rounds), FROND (a frond binary to use instead of building).
#
# Two servers (one event-loop thread each) on one SQLite store; tag
# `plain` and tag `ledger --ordered`, both with a step that makes store
# round trips rare. Runs, one after the other, on 127.0.0.1:
#   plain             GET owner /api/segment/get/plain      (one ID)
#   ordered-owner     GET owner /api/segment/get/ledger
#   ordered-forward   GET other /api/segment/get/ledger    (forwarded)
#   plain-batch       GET owner /v1/segment/plain?count=1000&as=text
#   ordered-batch-owner    the same of ledger on the owner
#   ordered-batch-forward  the same of ledger on the other node
# and prints req/s, IDs/s, p50/p99/p99.9 (medians over rounds) and each
# ordered run's ratio to the plain run of its shape.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)
WRK_ARGS=${WRK_ARGS:--t1 -c64 -d5s}
ROUNDS=${ROUNDS:-3}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
if [ -z "${FROND:-}" ]; then
  make -s build >/dev/null
  FROND=$src/build/frond
fi

tmp=$(mktemp -d /tmp/frond-bench.XXXXXX)
a_pid='' b_pid=''
cleanup() {
  [ -n "$b_pid" ] && kill "$b_pid" 2>/dev/null && wait "$b_pid" 2>/dev/null
  [ -n "$a_pid" ] && kill "$a_pid" 2>/dev/null && wait "$a_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"

store="sqlite:///$tmp/frond.db"
"$FROND" tag create plain --step 100000000 --store "$store" >/dev/null
"$FROND" tag create ledger --ordered --step 100000000 --store "$store" \
  >/dev/null
aport=$(free_port)
bport=$(free_port)
mkdir "$tmp/a" "$tmp/b"
"$FROND" serve --listen "127.0.0.1:$aport" --store "$store" --data-dir "$tmp/a" \
  --threads 1 --max-count 100000 --resp-listen off --log-level warn \
  2>"$tmp/a.log" &
a_pid=$!
wait_http "$aport"
"$FROND" serve --listen "127.0.0.1:$bport" --store "$store" --data-dir "$tmp/b" \
  --threads 1 --max-count 100000 --resp-listen off --log-level warn \
  2>"$tmp/b.log" &
b_pid=$!
wait_http "$bport"
# The first call claims: the owner is a.
curl -sf "http://127.0.0.1:$aport/api/segment/get/ledger" >/dev/null
curl -sf "http://127.0.0.1:$aport/api/segment/get/plain" >/dev/null
curl -sf "http://127.0.0.1:$bport/api/segment/get/ledger" >/dev/null

results=$tmp/results
: >"$results"
run() { # name url ids-per-request
  # shellcheck disable=SC2086
  line=$(wrk $WRK_ARGS -s "$src/bench/http/report.lua" "$2" | grep '^RESULT')
  echo "$1 $3 $line" >>"$results"
  echo "  done: $1" >&2
}
echo "wrk $WRK_ARGS; two servers, 1 thread each; $(nproc) cores; $ROUNDS rounds" >&2
round=1
while [ "$round" -le "$ROUNDS" ]; do
  echo "round $round" >&2
  run plain "http://127.0.0.1:$aport/api/segment/get/plain" 1
  run ordered-owner "http://127.0.0.1:$aport/api/segment/get/ledger" 1
  run ordered-forward "http://127.0.0.1:$bport/api/segment/get/ledger" 1
  run plain-batch "http://127.0.0.1:$aport/v1/segment/plain?count=1000&as=text" 1000
  run ordered-batch-owner \
    "http://127.0.0.1:$aport/v1/segment/ledger?count=1000&as=text" 1000
  run ordered-batch-forward \
    "http://127.0.0.1:$bport/v1/segment/ledger?count=1000&as=text" 1000
  round=$((round + 1))
done
grep -q "owns it" "$tmp/b.log" &&
  { echo "the other node claimed the tag: not a forwarding run" >&2; exit 1; }

awk "$WRK_MEDIANS"'
END {
  ref["ordered-owner"] = ref["ordered-forward"] = "plain";
  ref["ordered-batch-owner"] = ref["ordered-batch-forward"] = "plain-batch";
  printf "| run | req/s | IDs/s | p50 | p99 | p99.9 | failed | IDs/s vs plain | p99.9 vs plain |\n";
  printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (i = 1; i <= n; i++) {
    x = order[i]; r = (x in ref) ? ref[x] : x;
    printf "| %s | %.0f | %.0f | %d us | %d us | %d us | %d | %.2f | %.2f |\n", x, median(x, "rps"), median(x, "idps"), median(x, "p50"), median(x, "p99"), median(x, "p999"), failed[x], median(x, "idps") / median(r, "idps"), median(x, "p999") / median(r, "p999");
  }
}' "$results"
