#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/http/run.sh -- frond serve against nginx, side by side, same wrk.
#
#   bench/http/run.sh            (from the source tree; builds build/frond)
#
# Environment: WRK_ARGS (default "-t1 -c64 -d10s"), ROUNDS (default 3:
# the whole sequence runs this many times, interleaved, and each number is
# the median over rounds, which tames a noisy machine), THREADS (frond's
# event-loop threads, default 1: on a 2-core machine the load generator
# needs the other core), FROND (a frond binary to use instead of building).
#
# Runs, one after the other, on 127.0.0.1:
#   nginx      `return 200 "<18 digits>"`: the same body size as one ID
#   snowflake  GET /api/snowflake/get/bench   (Leaf path, one ID)
#   segment    GET /api/segment/get/bench     (Leaf path, one ID)
#   sf-batch   GET /v1/snowflake?count=1000&as=text
#   seg-batch  GET /v1/segment/bench?count=1000&as=text
#   sf-batch-16  snowflake batches again, layout time=41,node=6,seq=16
#   order      GET /v1/format/orders   (an order number: a snowflake ID,
#              permuted, Damm check digit, date prefix)
#   uuid7      GET /v1/uuid7
#   ulid       GET /v1/ulid
#   order-batch-16  GET /v1/format/orders?count=1000&as=text (seq=16)
#   uuid7-batch     GET /v1/uuid7?count=1000&as=text
#   ulid-batch      GET /v1/ulid?count=1000&as=text
#   objectid-batch  GET /v1/objectid?count=1000&as=text
#   uuid4-batch     GET /v1/uuid4?count=1000&as=text
# and prints req/s, IDs/s, p50/p99/p99.9 (medians over rounds) and the
# frond/nginx ratios; the format rows compare with the plain IDs beside
# them (snowflake, sf-batch-16) in the same run.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)
WRK_ARGS=${WRK_ARGS:--t1 -c64 -d10s}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] ||
  { echo "nginx is not installed (nginx-light)" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ -z "${FROND:-}" ]; then
  make -s build >/dev/null
  FROND=$src/build/frond
fi

tmp=$(mktemp -d /tmp/frond-bench.XXXXXX)
frond_pid='' nginx_pid='' wide_pid=''
cleanup() {
  [ -n "$wide_pid" ] && kill "$wide_pid" 2>/dev/null && wait "$wide_pid" 2>/dev/null
  [ -n "$frond_pid" ] && kill "$frond_pid" 2>/dev/null && wait "$frond_pid" 2>/dev/null
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"

# nginx, foreground, one worker, in the temp dir.
nport=$(free_port)
body=123456789012345678
mkdir -p "$tmp/nginx/logs"
user_line=
[ "$(id -u)" = 0 ] && user_line="user root;"
cat >"$tmp/nginx/nginx.conf" <<CONF
$user_line
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$nport;
    default_type text/plain;
    location / { return 200 "$body"; }
  }
}
CONF
"$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
nginx_pid=$!
wait_http "$nport"

# frond, with a tag whose step makes store round trips rare, and an order
# number format (19 digits hold every snowflake ID) under a fixed key.
fport=$(free_port)
store="sqlite:///$tmp/frond.db"
"$FROND" tag create bench --step 100000000 --store "$store" >/dev/null
FROND_ORDER_KEY="1:$(printf '%064d' 0)"
export FROND_ORDER_KEY
orders="order:digits=19,check=damm,key=1,prefix=%Y%m%d-"
"$FROND" serve --listen "127.0.0.1:$fport" --store "$store" \
  --data-dir "$tmp" --threads "$THREADS" --max-count 100000 --resp-listen off \
  --format.orders "$orders" --log-level warn 2>"$tmp/frond.log" &
frond_pid=$!
wait_http "$fport"
curl -sf "http://127.0.0.1:$fport/api/segment/get/bench" >/dev/null

# A second frond whose layout has 16 sequence bits (65.5 M IDs/s per node),
# so that snowflake batches measure the server rather than the layout's
# 4.096 M IDs/s bound.
wport=$(free_port)
mkdir "$tmp/wide"
"$FROND" serve --listen "127.0.0.1:$wport" --store none --data-dir "$tmp/wide" \
  --resp-listen off \
  --threads "$THREADS" --layout "time=41,node=6,seq=16" \
  --format.orders "$orders" --log-level warn 2>"$tmp/wide.log" &
wide_pid=$!
wait_http "$wport"

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
  run nginx "http://127.0.0.1:$nport/" 1
  run snowflake "http://127.0.0.1:$fport/api/snowflake/get/bench" 1
  run segment "http://127.0.0.1:$fport/api/segment/get/bench" 1
  run sf-batch "http://127.0.0.1:$fport/v1/snowflake?count=1000&as=text" 1000
  run seg-batch "http://127.0.0.1:$fport/v1/segment/bench?count=1000&as=text" 1000
  run sf-batch-16 "http://127.0.0.1:$wport/v1/snowflake?count=1000&as=text" 1000
  run order "http://127.0.0.1:$fport/v1/format/orders" 1
  run uuid7 "http://127.0.0.1:$fport/v1/uuid7" 1
  run ulid "http://127.0.0.1:$fport/v1/ulid" 1
  run order-batch-16 "http://127.0.0.1:$wport/v1/format/orders?count=1000&as=text" 1000
  run uuid7-batch "http://127.0.0.1:$fport/v1/uuid7?count=1000&as=text" 1000
  run ulid-batch "http://127.0.0.1:$fport/v1/ulid?count=1000&as=text" 1000
  run objectid-batch "http://127.0.0.1:$fport/v1/objectid?count=1000&as=text" 1000
  run uuid4-batch "http://127.0.0.1:$fport/v1/uuid4?count=1000&as=text" 1000
  round=$((round + 1))
done

awk "$WRK_MEDIANS"'
END {
  printf "| run | req/s | IDs/s | p50 | p99 | p99.9 | failed | req/s vs nginx | p99.9 vs nginx |\n";
  printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  nr = median("nginx", "rps"); np = median("nginx", "p999");
  for (i = 1; i <= n; i++) {
    x = order[i];
    printf "| %s | %.0f | %.0f | %d us | %d us | %d us | %d | %.2f | %.2f |\n", x, median(x, "rps"), median(x, "idps"), median(x, "p50"), median(x, "p99"), median(x, "p999"), failed[x], median(x, "rps") / nr, median(x, "p999") / np;
  }
  # ID formats beside the plain IDs of the same shape of request.
  ref["order"] = ref["uuid7"] = ref["ulid"] = "snowflake";
  ref["order-batch-16"] = ref["uuid7-batch"] = ref["ulid-batch"] = "sf-batch-16";
  ref["objectid-batch"] = ref["uuid4-batch"] = "sf-batch-16";
  printf "\n| format run | IDs/s | beside | its IDs/s | ratio | p99.9 ratio |\n";
  printf "| --- | ---: | --- | ---: | ---: | ---: |\n";
  for (i = 1; i <= n; i++) {
    x = order[i];
    if (!(x in ref)) continue;
    r = ref[x];
    printf "| %s | %.0f | %s | %.0f | %.2f | %.2f |\n", x, median(x, "idps"), r, median(r, "idps"), median(x, "idps") / median(r, "idps"), median(x, "p999") / median(r, "p999");
  }
}' "$results"
