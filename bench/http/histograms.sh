#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/http/histograms.sh -- what the latency histograms cost: the same
# single-ID HTTP load against two servers that differ only in
# metrics_histograms (on, the default, and off), in one run.
#
#   bench/http/histograms.sh     (from the source tree; builds build/frond)
#
# Two measures:
#   req/s    wrk against each server, ROUNDS times, alternating which goes
#            first; medians per server, and the median of the per-round
#            ratios on/off (each round's pair ran back to back).
#   instructions per request   each server under valgrind's callgrind
#            answers N1 and then N2 requests (two processes each); the
#            difference of the two runs' instruction counts over N2 - N1
#            is the cost of one request, without start-up, and without
#            the machine's noise.
#
# Environment: WRK_ARGS (default "-t1 -c64 -d5s"), ROUNDS (default 7),
# THREADS (frond's event loops, default 1), N1 and N2 (callgrind's request
# counts, default 2000 and 12000), PATHQ (default /api/snowflake/get/bench),
# FROND (a frond binary instead of building), CALLGRIND=0 to skip it.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)
WRK_ARGS=${WRK_ARGS:--t1 -c64 -d5s}
ROUNDS=${ROUNDS:-7}
THREADS=${THREADS:-1}
N1=${N1:-2000}
N2=${N2:-12000}
PATHQ=${PATHQ:-/api/snowflake/get/bench}
CALLGRIND=${CALLGRIND:-1}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
if [ "$CALLGRIND" = 1 ]; then
  command -v valgrind >/dev/null ||
    { echo "valgrind is not installed (CALLGRIND=0 skips it)" >&2; exit 1; }
fi
if [ -z "${FROND:-}" ]; then
  make -s build >/dev/null
  FROND=$src/build/frond
fi

tmp=$(mktemp -d /tmp/frond-bench.XXXXXX)
pids=
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"
# serve NAME on|off [wrapper...]: a server in its own directory; sets $p.
serve() {
  name=$1 hist=$2
  shift 2
  p=$(free_port)
  mkdir -p "$tmp/$name"
  "$@" "$FROND" serve --listen "127.0.0.1:$p" --resp-listen off \
    --store none --data-dir "$tmp/$name" --threads "$THREADS" \
    --metrics-histograms "$hist" --log-level warn 2>"$tmp/$name.log" &
  pids="$pids $!"
  spid=$!
  wait_http "$p" /livez 600
}

# -------------------------------------------------------------- req/s
serve on on
on_port=$p
serve off off
off_port=$p
results=$tmp/results
: >"$results"
run() { # name port
  # shellcheck disable=SC2086
  line=$(wrk $WRK_ARGS -s "$src/bench/http/report.lua" \
    "http://127.0.0.1:$2$PATHQ" | grep '^RESULT')
  echo "$1 $round $line" >>"$results"
}
echo "wrk $WRK_ARGS $PATHQ; frond threads=$THREADS; $(nproc) cores;" \
  "$ROUNDS rounds, alternating" >&2
round=1
while [ "$round" -le "$ROUNDS" ]; do
  echo "round $round" >&2
  if [ $((round % 2)) = 1 ]; then
    run on "$on_port"
    run off "$off_port"
  else
    run off "$off_port"
    run on "$on_port"
  fi
  round=$((round + 1))
done
# The servers answered everything: no error, no other status.
awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^(errors|non2xx)=/ && $i !~ /=0$/) { print "failed: " $0; exit 1 } }' "$results" >&2

awk '
function val(s,   i) { for (i = 3; i <= NF; i++) if (index($i, s "=") == 1) return substr($i, length(s) + 2); }
function median(a, n,   k, j, t) {
  for (k = 2; k <= n; k++)
    for (j = k; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t; }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2;
}
{
  rps = val("requests") / (val("duration_us") / 1e6);
  k = ++n[$1]; r[$1, k] = rps; p50[$1, k] = val("p50_us"); p99[$1, k] = val("p99_us");
  by[$1, $2] = rps;
}
END {
  printf "| histograms | req/s (median) | min | max | p50 | p99 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n";
  split("on off", names, " ");
  for (i = 1; i <= 2; i++) {
    x = names[i]; lo = 1e18; hi = 0;
    for (k = 1; k <= n[x]; k++) { a[k] = r[x, k]; if (a[k] < lo) lo = a[k]; if (a[k] > hi) hi = a[k];
      b[k] = p50[x, k]; c[k] = p99[x, k]; }
    med[x] = median(a, n[x]);
    printf "| %s | %.0f | %.0f | %.0f | %d us | %d us |\n", x, med[x], lo, hi, median(b, n[x]), median(c, n[x]);
  }
  line = "";
  for (k = 1; k <= n["on"]; k++) { q[k] = by["on", k] / by["off", k]; line = line sprintf(" %.3f", q[k]); }
  printf "\nreq/s on/off: %.3f (ratio of medians); per round:%s; median of rounds %.3f\n",
    med["on"] / med["off"], line, median(q, n["on"]);
}' "$results"

# shellcheck disable=SC2086
kill $pids 2>/dev/null || true
for p in $pids; do wait "$p" 2>/dev/null || true; done
pids=

[ "$CALLGRIND" = 1 ] || exit 0

# ------------------------------------------------------ instructions
# A keep-alive client sending N requests one after the other.
cat >"$tmp/client.py" <<'PY'
import socket, sys
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
req = ("GET %s HTTP/1.1\r\nHost: bench\r\n\r\n" % path).encode()
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
# instructions NAME on|off N: the whole process's instructions (Ir).
instructions() {
  serve "cg-$1-$3" "$2" valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/cg-$1-$3.out" --trace-children=no
  python3 "$tmp/client.py" "$p" "$PATHQ" "$3"
  kill "$spid"
  wait "$spid" 2>/dev/null || true
  pids=
  sed -n 's/^totals: \([0-9]*\).*/\1/p' "$tmp/cg-$1-$3.out"
}
echo "callgrind: $N1 then $N2 requests per server" >&2
on1=$(instructions on on "$N1")
on2=$(instructions on on "$N2")
off1=$(instructions off off "$N1")
off2=$(instructions off off "$N2")
awk -v on1="$on1" -v on2="$on2" -v off1="$off1" -v off2="$off2" \
  -v n1="$N1" -v n2="$N2" 'BEGIN {
  on = (on2 - on1) / (n2 - n1); off = (off2 - off1) / (n2 - n1);
  printf "\n| histograms | instructions per request | vs off |\n| --- | ---: | ---: |\n";
  printf "| on | %.0f | %.3f |\n| off | %.0f | 1.000 |\n", on, on / off, off;
}'
