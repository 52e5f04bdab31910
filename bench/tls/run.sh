#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/tls/run.sh -- single IDs over TLS: frond serve against nginx with
# the same certificate, protocols and ciphers, the same wrk, the same run.
#
#   bench/tls/run.sh             (from the source tree; builds build/frond)
#
# Environment: WRK_ARGS (default "-t1 -c64 -d10s"), ROUNDS (default 3:
# the runs are interleaved, and each number is the median over rounds),
# THREADS (frond's event-loop threads, default 1, as nginx's one worker:
# the load generator needs the other core of a 2-core machine), FROND (a
# frond binary to use instead of building).
#
# Runs, one after the other, on 127.0.0.1, all keep-alive but the last
# two:
#   nginx          http://    `return 200 "<18 digits>"` (one ID's size)
#   nginx-tls      https://   the same over TLS
#   frond          http://    GET /api/snowflake/get/bench (one ID)
#   frond-tls      https://   the same over TLS (tls_listen)
#   nginx-tls-new  https://   a new connection (full handshake) a request
#   frond-tls-new  https://   the same for frond
# Both serve an ECDSA P-256 certificate made here, TLS 1.2 and 1.3, the
# same ECDHE AEAD ciphers; wrk negotiates TLS 1.3 (TLS_AES_128_GCM_SHA256)
# with both. Prints req/s, p50/p99/p99.9 (medians over rounds) and the
# ratios: frond-tls / nginx-tls (the goal: >= 1.0), frond-tls / frond
# (the cost of TLS), and the same for new connections.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)
WRK_ARGS=${WRK_ARGS:--t1 -c64 -d10s}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
command -v openssl >/dev/null || { echo "openssl is not installed" >&2; exit 1; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] ||
  { echo "nginx is not installed (nginx-light)" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ -z "${FROND:-}" ]; then
  make -s build >/dev/null
  FROND=$src/build/frond
fi

tmp=$(mktemp -d /tmp/frond-bench-tls.XXXXXX)
frond_pid='' nginx_pid=''
cleanup() {
  [ -n "$frond_pid" ] && kill "$frond_pid" 2>/dev/null && wait "$frond_pid" 2>/dev/null
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"

# wait_https PORT: as wait_http, over TLS (the certificate not checked).
wait_https() {
  _i=0
  until curl -sk -o /dev/null "https://127.0.0.1:$1/"; do
    _i=$((_i + 1))
    [ "$_i" -lt 100 ] || { echo "nothing on port $1" >&2; exit 1; }
    sleep 0.1
  done
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
ciphers="ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
ciphers="$ciphers:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
ciphers="$ciphers:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

# nginx, foreground, one worker, in the temp dir.
nport=$(free_port)
nsport=$(free_port)
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
  ssl_certificate $tmp/cert.pem;
  ssl_certificate_key $tmp/key.pem;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_ciphers $ciphers;
  ssl_ecdh_curve X25519:prime256v1:secp384r1;
  ssl_session_tickets on;
  server {
    listen 127.0.0.1:$nport;
    listen 127.0.0.1:$nsport ssl;
    default_type text/plain;
    location / { return 200 "$body"; }
  }
}
CONF
"$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
nginx_pid=$!
wait_http "$nport"
wait_https "$nsport"

fport=$(free_port)
fsport=$(free_port)
"$FROND" serve --listen "127.0.0.1:$fport" --tls-listen "127.0.0.1:$fsport" \
  --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" --store none \
  --data-dir "$tmp" --threads "$THREADS" --resp-listen off \
  --log-level warn 2>"$tmp/frond.log" &
frond_pid=$!
wait_http "$fport"
wait_https "$fsport"

results=$tmp/results
: >"$results"
run() { # name url [wrk header]
  # shellcheck disable=SC2086
  line=$(wrk $WRK_ARGS ${3:+-H "$3"} -s "$src/bench/http/report.lua" "$2" |
    grep '^RESULT')
  echo "$1 $line" >>"$results"
  echo "  done: $1" >&2
}
path=/api/snowflake/get/bench
echo "wrk $WRK_ARGS; frond threads=$THREADS; $(nproc) cores; $ROUNDS rounds" >&2
round=1
while [ "$round" -le "$ROUNDS" ]; do
  echo "round $round" >&2
  run nginx "http://127.0.0.1:$nport/"
  run nginx-tls "https://127.0.0.1:$nsport/"
  run frond "http://127.0.0.1:$fport$path"
  run frond-tls "https://127.0.0.1:$fsport$path"
  run nginx-tls-new "https://127.0.0.1:$nsport/" "Connection: close"
  run frond-tls-new "https://127.0.0.1:$fsport$path" "Connection: close"
  round=$((round + 1))
done

awk "$WRK_MEDIANS"'
END {
  printf "| run | req/s | p50 | p99 | p99.9 | failed |\n";
  printf "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (i = 1; i <= n; i++) {
    x = order[i];
    printf "| %s | %.0f | %d us | %d us | %d us | %d |\n", x, median(x, "rps"), median(x, "p50"), median(x, "p99"), median(x, "p999"), failed[x];
  }
  printf "\n| ratio | req/s | p99.9 |\n| --- | ---: | ---: |\n";
  split("frond-tls nginx-tls frond-tls frond nginx-tls nginx frond-tls-new nginx-tls-new", p, " ");
  for (i = 1; i <= 8; i += 2)
    printf "| %s / %s | %.2f | %.2f |\n", p[i], p[i + 1], median(p[i], "rps") / median(p[i + 1], "rps"), median(p[i], "p999") / median(p[i + 1], "p999");
}' "$results"
