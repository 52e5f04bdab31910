#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Go and Java clients' hot path beside their language's bare atomic
# counter, in the same run, and server calls per million IDs: a frond
# serve (FROND_BIN, default build/frond: `make` first) on a free loopback
# port in a temp dir with a tag "bench", then bench/clients/go and
# bench/clients/java against it; first bench/clients/lockadd.c, what a
# loop around one locked add costs on this CPU by the loop's shape.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=${FROND_BIN:-$src/build/frond}
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
store="sqlite://$dir/frond.db"
"$bin" tag create bench --step 100000 --store "$store" >/dev/null
"$bin" serve --listen 127.0.0.1:$port --resp-listen off --store "$store" \
  --data-dir "$dir" --threads 1 >"$dir/server.log" 2>&1 &
pid=$!
i=0
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
  i=$((i + 1)); [ $i -lt 300 ] || { cat "$dir/server.log"; exit 1; }
  sleep 0.1
done
echo "## The locked add on this CPU"; echo
${CC:-cc} -O2 -o "$dir/lockadd" "$src/bench/clients/lockadd.c"
"$dir/lockadd"
echo; echo "## Go"; echo
(cd "$src/bench/clients/go" && GOPROXY=off GOFLAGS=-mod=mod go run . "http://127.0.0.1:$port")
echo; echo "## Java"; echo
jar=$("$src/clients/java/build.sh" "$dir/java")
javac -cp "$jar" -d "$dir/java" "$src/bench/clients/java/Bench.java"
java -cp "$jar:$dir/java" Bench "http://127.0.0.1:$port"
