-- SPDX-License-Identifier: Apache-2.0
-- report.lua -- wrk script: one machine-readable line with the numbers
-- run.sh prints (wrk --latency has no p99.9).
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d bytes=%d p50_us=%d p99_us=%d " ..
    "p999_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    e.connect + e.read + e.write + e.timeout, e.status))
end
