# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
# bench/lib.sh -- what the benchmark scripts share. Sourced, not run:
#   . "$src/bench/lib.sh"

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http PORT [PATH [TRIES]]: wait until something answers HTTP on
# 127.0.0.1:PORT (TRIES tenths of a second, 100 by default); exit 1 if
# nothing does.
wait_http() {
  _i=0
  until curl -s -o /dev/null "http://127.0.0.1:$1${2:-/}"; do
    _i=$((_i + 1))
    [ "$_i" -lt "${3:-100}" ] || { echo "nothing on port $1" >&2; exit 1; }
    sleep 0.1
  done
}
