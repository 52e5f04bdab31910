#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/http/auth.sh -- what credentials cost a single-ID request: the
# same server without a credential, with the admin token, and with a named
# client of clients_file (its secret hashed and compared on every
# request), side by side, same wrk.
#
#   bench/http/auth.sh            (from the source tree; builds build/frond)
#
# Environment: WRK_ARGS (default "-t1 -c64 -d10s"), ROUNDS (default 3,
# interleaved; each number is the median over rounds), THREADS (frond's
# event-loop threads, default 1), FROND (a frond binary to use instead of
# building).
#
# Runs, one after the other, on 127.0.0.1, GET /api/snowflake/get/bench:
#   open     a server with no credential configured
#   open-hdr the same, sent the client's header (which it ignores): what
#            the longer request costs to read
#   token    a server with admin_token and clients_file: Bearer <token>
#   client   the same server: Bearer bench:<secret> (tags=* formats=*)
#   refused  the same server: a client whose formats= does not match (403)
# and prints req/s, p50/p99/p99.9 and the ratios against open. Then,
# unless CALLGRIND=0, instructions per request, which the machine's noise
# does not move: each server under valgrind's callgrind answers N1 and
# then N2 requests (default 2000 and 12000; two processes each), and the
# difference of the two counts over N2 - N1 is one request's cost.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)
WRK_ARGS=${WRK_ARGS:--t1 -c64 -d10s}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
N1=${N1:-2000}
N2=${N2:-12000}
CALLGRIND=${CALLGRIND:-1}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
if [ -z "${FROND:-}" ]; then
  make -s build >/dev/null
  FROND=$src/build/frond
fi

tmp=$(mktemp -d /tmp/frond-bench.XXXXXX)
open_pid='' auth_pid=''
cleanup() {
  [ -n "$open_pid" ] && kill "$open_pid" 2>/dev/null && wait "$open_pid" 2>/dev/null
  [ -n "$auth_pid" ] && kill "$auth_pid" 2>/dev/null && wait "$auth_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"

token=bench-admin-token-0123456789abcdef
"$FROND" clients add bench --rights issue --tags '*' --formats '*' \
  --secret-file "$tmp/bench.secret" >"$tmp/clients.conf"
"$FROND" clients add other --rights issue --tags '*' --formats uuid7 \
  --secret-file "$tmp/other.secret" >>"$tmp/clients.conf"
chmod 600 "$tmp/clients.conf"

oport=$(free_port)
mkdir "$tmp/open" "$tmp/auth"
"$FROND" serve --listen "127.0.0.1:$oport" --store none --data-dir "$tmp/open" \
  --threads "$THREADS" --resp-listen off --log-level error \
  2>"$tmp/open.log" &
open_pid=$!
aport=$(free_port)
"$FROND" serve --listen "127.0.0.1:$aport" --store none --data-dir "$tmp/auth" \
  --threads "$THREADS" --resp-listen off --log-level error \
  --admin-token "$token" --clients-file "$tmp/clients.conf" \
  2>"$tmp/auth.log" &
auth_pid=$!
wait_http "$oport" /livez
wait_http "$aport" /livez

results=$tmp/results
: >"$results"
run() { # name url [Authorization value]
  if [ -n "${3:-}" ]; then
    # shellcheck disable=SC2086
    line=$(wrk $WRK_ARGS -H "Authorization: $3" \
      -s "$src/bench/http/report.lua" "$2" | grep '^RESULT')
  else
    # shellcheck disable=SC2086
    line=$(wrk $WRK_ARGS -s "$src/bench/http/report.lua" "$2" | grep '^RESULT')
  fi
  echo "$1 $line" >>"$results"
  echo "  done: $1" >&2
}
path=/api/snowflake/get/bench
echo "wrk $WRK_ARGS; frond threads=$THREADS; $(nproc) cores; $ROUNDS rounds" >&2
round=1
while [ "$round" -le "$ROUNDS" ]; do
  echo "round $round" >&2
  run open "http://127.0.0.1:$oport$path"
  run open-hdr "http://127.0.0.1:$oport$path" "Bearer bench:$(cat "$tmp/bench.secret")"
  run token "http://127.0.0.1:$aport$path" "Bearer $token"
  run client "http://127.0.0.1:$aport$path" "Bearer bench:$(cat "$tmp/bench.secret")"
  run refused "http://127.0.0.1:$aport$path" "Bearer other:$(cat "$tmp/other.secret")"
  round=$((round + 1))
done

awk "$WRK_MEDIANS"'
END {
  printf "| run | req/s | p50 | p99 | p99.9 | non-2xx | errors | req/s vs open | p99.9 vs open |\n";
  printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  nr = median("open", "rps"); np = median("open", "p999");
  for (i = 1; i <= n; i++) {
    x = order[i];
    printf "| %s | %.0f | %d us | %d us | %d us | %d | %d | %.2f | %.2f |\n", x, median(x, "rps"), median(x, "p50"), median(x, "p99"), median(x, "p999"), non2xx[x], errors[x], median(x, "rps") / nr, median(x, "p999") / np;
  }
}' "$results"

kill "$open_pid" "$auth_pid" 2>/dev/null || true
wait "$open_pid" "$auth_pid" 2>/dev/null || true
open_pid='' auth_pid=''
[ "$CALLGRIND" = 1 ] || exit 0
command -v valgrind >/dev/null ||
  { echo "valgrind is not installed (CALLGRIND=0 skips it)" >&2; exit 1; }

# A keep-alive client sending N requests one after the other.
cat >"$tmp/client.py" <<'PY'
import socket, sys
port, path, n, auth = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = socket.create_connection(("127.0.0.1", port))
hdr = "Authorization: %s\r\n" % auth if auth else ""
req = ("GET %s HTTP/1.1\r\nHost: bench\r\n%s\r\n" % (path, hdr)).encode()
buf = b""
for _ in range(n):
    s.sendall(req)
    while True:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            if len(rest) >= length:
                if not head.startswith(b"HTTP/1.1 200"):
                    sys.exit("not 200: %r" % head[:40])
                buf = rest[length:]
                break
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("closed")
        buf += chunk
s.close()
PY
# instructions NAME N AUTH [serve flags...]: the process's instructions.
instructions() {
  name=$1 n=$2 auth=$3
  shift 3
  port=$(free_port)
  rm -rf "$tmp/cg"
  mkdir "$tmp/cg"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg-$name-$n.out" \
    "$FROND" serve --listen "127.0.0.1:$port" --store none \
    --data-dir "$tmp/cg" --threads 1 --resp-listen off --log-level error \
    "$@" 2>/dev/null &
  cg_pid=$!
  open_pid=$cg_pid
  wait_http "$port" /livez 600
  python3 "$tmp/client.py" "$port" "$path" "$n" "$auth"
  kill "$cg_pid"
  wait "$cg_pid" 2>/dev/null || true
  open_pid=''
  sed -n 's/^totals: \([0-9]*\).*/\1/p' "$tmp/cg-$name-$n.out"
}
echo "callgrind: $N1 then $N2 requests per server" >&2
creds="--admin-token $token --clients-file $tmp/clients.conf"
secret=$(cat "$tmp/bench.secret")
for n in "$N1" "$N2"; do
  echo "open $n $(instructions open "$n" '')"
  echo "open-hdr $n $(instructions open-hdr "$n" "Bearer bench:$secret")"
  # shellcheck disable=SC2086
  echo "token $n $(instructions token "$n" "Bearer $token" $creds)"
  # shellcheck disable=SC2086
  echo "client $n $(instructions client "$n" "Bearer bench:$secret" $creds)"
done >"$tmp/cg.txt"
awk -v n1="$N1" -v n2="$N2" '
{ c[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
END {
  printf "\n| run | instructions per request | vs open |\n| --- | ---: | ---: |\n";
  base = (c["open", n2] - c["open", n1]) / (n2 - n1);
  for (i = 1; i <= k; i++) {
    x = order[i]; v = (c[x, n2] - c[x, n1]) / (n2 - n1);
    printf "| %s | %.0f | %.3f |\n", x, v, v / base;
  }
}' "$tmp/cg.txt"
