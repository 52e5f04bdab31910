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
# How long a harness runs: the network's parsers longer.
seconds_of() {
  case $1 in fuzz_http | fuzz_resp) echo "$long" ;; *) echo "$secs" ;; esac
}
run() {
  name=$1
  t=$(seconds_of "$name")
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
# Two lanes, each running its harnesses one after the other: the long
# ones first, one to a lane, then the rest dealt to the lanes in turn, so
# that both end together (pairs started together waited for the slower
# of each, a minute of one core idle for every long harness). A lane's
# exit status is the number of harnesses that found something.
long_ones=
short_ones=
for name in $(cd "$src/fuzz" && ls fuzz_*.c | sed 's/\.c$//'); do
  if [ "$(seconds_of "$name")" -gt "$secs" ]; then
    long_ones="$long_ones $name"
  else
    short_ones="$short_ones $name"
  fi
done
lane_a=
lane_b=
turn=a
for name in $long_ones $short_ones; do
  if [ $turn = a ]; then
    lane_a="$lane_a $name" turn=b
  else
    lane_b="$lane_b $name" turn=a
  fi
done
lane() {
  n=0
  for name in "$@"; do
    run "$name" || n=$((n + 1))
  done
  return $n
}
lane $lane_a &
pa=$!
lane $lane_b || failed=$((failed + $?))
wait $pa || failed=$((failed + $?))
if [ $failed -eq 0 ]; then
  rm -rf "$out"
  echo "every harness ran; nothing found"
else
  echo "$failed harness(es) found something: $out"
  exit 1
fi
