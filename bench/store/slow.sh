#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The double buffer's latency with each engine slowed by 100 ms, beside
# the same engine unslowed and an instant in-memory store, in one run.
#
#   bench/store/slow.sh [BUILD]       BUILD: where bench_segment is (build)
#
# It starts a throwaway PostgreSQL and MariaDB (scripts/) in a temp dir,
# and the fault-injecting TCP proxy of the chaos suite
# (tests/chaos/netproxy.py) in front of each, delaying every chunk by
# 50 ms each way: every round trip 100 ms slower. A PostgreSQL allocation
# is one round trip (UPDATE ... RETURNING), a MariaDB one four (START
# TRANSACTION, UPDATE, SELECT, COMMIT), so 400 ms. SQLite has no wire:
# bench_segment's "slow+" hook sleeps 100 ms before every allocation.
# First the time of one allocation through each (bench_store, medians),
# then bench_segment --stores: p50, p99.9 and max of frond_seg_next over
# 10 million calls, five runs interleaved, with a step sized for the rate
# (as a deployment sizes it against its peak; docs/segment.md).
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
for b in bench_segment bench_store; do
  [ -x "$build/$b" ] || {
    echo "bench/store/slow.sh: no $build/$b (make first)" >&2
    exit 1
  }
done
tmp=$(mktemp -d)
chmod 755 "$tmp" # the postgres user (pg.sh as root) enters it
pgdir=
mydir=
cleanup() {
  exec 3>&- 2>/dev/null || : # the proxy ends when its stdin closes
  [ -z "$pgdir" ] || "$here/scripts/pg.sh" stop "$pgdir" >/dev/null 2>&1 || :
  [ -z "$mydir" ] || "$here/scripts/mariadb.sh" stop "$mydir" >/dev/null 2>&1 || :
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

pgdir=$tmp/pg
mydir=$tmp/my
mkdir "$pgdir" "$mydir"
pg=$("$here/scripts/pg.sh" start "$pgdir")
my=$("$here/scripts/mariadb.sh" start "$mydir")
port() { echo "$1" | sed 's|.*@127\.0\.0\.1:\([0-9]*\)/.*|\1|'; }

mkfifo "$tmp/in"
python3 "$here/tests/chaos/netproxy.py" --route "pg=127.0.0.1:$(port "$pg")" \
  --route "my=127.0.0.1:$(port "$my")" <"$tmp/in" >"$tmp/ports" &
exec 3>"$tmp/in"
i=0
while [ ! -s "$tmp/ports" ] && [ $i -lt 100 ]; do
  sleep 0.1
  i=$((i + 1))
done
ports=$(cat "$tmp/ports")
proxy_port() { echo "$ports" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
python3 - "$(proxy_port control)" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rw")
for cmd in ("pg delay 50", "my delay 50"):
    f.write(cmd + "\n")
    f.flush()
    if f.readline().strip() != "ok":
        sys.exit("netproxy: " + cmd)
EOF
pg_slow=$(echo "$pg" | sed "s|127\.0\.0\.1:[0-9]*/|127.0.0.1:$(proxy_port pg)/|")
my_slow=$(echo "$my" | sed "s|127\.0\.0\.1:[0-9]*/|127.0.0.1:$(proxy_port my)/|")
lite="sqlite://$tmp/bench.db"

echo "one allocation (bench_store, median of 5 rounds of 5, one connection)"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for s in "postgresql $pg" "postgresql+100ms $pg_slow" "mysql $my" \
  "mysql+100ms $my_slow" "sqlite $lite" "sqlite+100ms slow+$lite"; do
  set -- $s
  case $2 in
  slow+*) echo "  $1: 100 ms plus sqlite's (a sleep in bench_segment)" ;;
  *)
    "$build/bench_store" "$2" 5 5 | awk -v n="$1" \
      '$1 == "median" { printf "  %-18s %8.1f ms\n", n, 1000 / $2 }'
    ;;
  esac
done
echo
"$build/bench_segment" --stores "postgresql=$pg" "postgresql+100ms=$pg_slow" \
  "mysql=$my" "mysql+100ms=$my_slow" "sqlite=$lite" "sqlite+100ms=slow+$lite"
