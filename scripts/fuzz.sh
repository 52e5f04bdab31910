#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Run every libFuzzer harness of a fuzz build for a bounded time, on a
# copy of its corpus (new inputs go to a temporary directory, not into
# the source tree). A crash, a leak, a timeout or an out-of-memory fails
# the run; the input that caused it is kept and named.
#
#   scripts/fuzz.sh BUILD_DIR SECONDS [LONG_SECONDS]
#
# The parsers that face the network (fuzz_http, fuzz_resp) get
# LONG_SECONDS (default: 4 x SECONDS). Two harnesses run at a time.
set -eu
[ $# -ge 2 ] || { echo "usage: scripts/fuzz.sh BUILD_DIR SECONDS [LONG_SECONDS]" >&2; exit 2; }
build=$1
secs=$2
long=${3:-$((secs * 4))}
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/frond-fuzz-XXXXXX")
trap 'kill 0 2>/dev/null' INT TERM
failed=0
run() {
  name=$1
  t=$secs
  case $name in fuzz_http | fuzz_resp) t=$long ;; esac
  mkdir -p "$out/$name/new" "$out/$name/crash"
  if "$build/$name" -max_total_time="$t" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/$name/crash/" \
    "$out/$name/new" "$src/fuzz/corpus/$name" >"$out/$name/log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name/log")
    echo "ok   $name: ${runs:-?} runs in ${t}s, nothing found"
  else
    echo "FAIL $name: see $out/$name/log; inputs in $out/$name/crash/"
    tail -n 30 "$out/$name/log"
    return 1
  fi
}
harnesses=$(cd "$src/fuzz" && ls fuzz_*.c | sed 's/\.c$//')
set -- $harnesses
while [ $# -gt 0 ]; do
  a=$1
  shift
  if [ $# -gt 0 ]; then
    b=$1
    shift
    run "$a" & pa=$!
    run "$b" || failed=$((failed + 1))
    wait $pa || failed=$((failed + 1))
  else
    run "$a" || failed=$((failed + 1))
  fi
done
if [ $failed -eq 0 ]; then
  rm -rf "$out"
  echo "every harness ran; nothing found"
else
  echo "$failed harness(es) found something: $out"
  exit 1
fi
