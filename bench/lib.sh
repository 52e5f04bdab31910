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

# WRK_MEDIANS: the start of an awk program over the lines report.lua
# prints ("NAME IDS_PER_REQUEST key=value ...", one per run of wrk), for a
# script to append its own END block to: awk "$WRK_MEDIANS"'END { ... }'.
# It keeps, by NAME in order of first sight (order[1..n]), every run's
# rps, idps, p50, p99 and p999, and counts failed (errors and non-2xx
# answers), errors and non2xx; median(NAME, METRIC) is the median run's.
# shellcheck disable=SC2016,SC2034 # awk's own $fields; used by the sourcing script
WRK_MEDIANS='
function val(s,   i) { for (i = 1; i <= NF; i++) if (index($i, s "=") == 1) return substr($i, length(s) + 2); }
function median(name, m,   k, j, t, a) {
  for (k = 1; k <= cnt[name]; k++) a[k] = v[name, m, k];
  for (k = 2; k <= cnt[name]; k++)
    for (j = k; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t; }
  return a[int((cnt[name] + 1) / 2)];
}
{
  name = $1; k = ++cnt[name];
  if (k == 1) order[++n] = name;
  secs = val("duration_us") / 1e6; bad = val("errors") + val("non2xx");
  v[name, "rps", k] = val("requests") / secs;
  v[name, "idps", k] = (val("requests") - bad) * $2 / secs;
  v[name, "p50", k] = val("p50_us"); v[name, "p99", k] = val("p99_us");
  v[name, "p999", k] = val("p999_us"); failed[name] += bad;
  errors[name] += val("errors"); non2xx[name] += val("non2xx");
}
'
