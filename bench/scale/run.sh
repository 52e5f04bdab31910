#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/scale/run.sh -- Frond with a million tags and ten thousand
# connections (bench/scale/scale.py says what it measures).
#
#   bench/scale/run.sh [path/to/frond]
#
# Environment: TAGS (1000000), USED (100000), CONNS (10000), IDLE_S (30),
# IDLE_LONG_S (240), WRK_ARGS ("-t1 -c16 -d5s"). Without a binary given,
# it builds the release (make) and uses build/frond. Needs wrk and
# python3; the shell's open-file limit must allow CONNS connections
# (ulimit -n).
set -eu
cd "$(dirname "$0")/../.."
if [ -z "${1:-}${FROND_BIN:-}" ]; then
  make -s build >/dev/null
fi
FROND_BIN=${1:-${FROND_BIN:-build/frond}}
command -v wrk >/dev/null || { echo "run.sh: wrk is not installed" >&2; exit 1; }
[ -x "$FROND_BIN" ] || { echo "run.sh: no frond binary at $FROND_BIN" >&2; exit 1; }
export FROND_BIN
exec python3 bench/scale/scale.py
