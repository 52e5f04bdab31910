#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/coord/run.sh -- what 1,024 nodes cost each coordinator, beside
# one node (bench/coord/coord.py says what it measures).
#
#   bench/coord/run.sh [BUILD]
#
# Environment: NODES (1024), HOLD_S (30), COORDS ("postgresql mariadb
# zookeeper etcd"), TIMINGS (a coordinator URI's query, e.g.
# "report_ms=9000&window_ms=18000"; empty: the defaults), PARALLEL (32:
# claims at once). Without BUILD it builds the release (build/) and uses
# build/coord_scale. Needs the servers scripts/deps.sh test installs.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
if [ -z "${1:-}" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFROND_TESTS=ON >/dev/null
  cmake --build build -j2 --target coord_scale >/dev/null
fi
[ -x "$BUILD/coord_scale" ] || { echo "run.sh: no $BUILD/coord_scale" >&2; exit 1; }
export COORD_SCALE="$BUILD/coord_scale"
exec python3 bench/coord/coord.py
