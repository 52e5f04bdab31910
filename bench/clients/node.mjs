#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// bench/clients/node.mjs -- the Node client's segment handle beside a bare
// BigInt counter, in one run, and its server calls per million IDs.
//
//   node bench/clients/node.mjs [path/to/frond] [--ids N] [--reps R]
//
// Starts `frond serve` (default build/frond, a release build: make) on a
// free loopback port in a temp dir with one tag, then, on the main
// thread:
//
//   BigInt n++         let n = 0n; n++ -- the bare counter
//   tryNext()          a leased tag's next ID, synchronous from the buffer
//                      (await next() only when a range has not come yet)
//   await next()       the same through a Promise, per ID
//
// each N IDs (default 2,000,000) a repetition, R repetitions (default 7)
// interleaved; prints each one's median ns/ID and its ratio to the bare
// counter. Then the server calls per million IDs: over the whole run
// (the range size ramping up from minRange) and at the steady rate after
// it (5 x maxRange IDs once the size has reached maxRange).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { Client } = await import(join(SRC, "clients", "node", "index.js"));

const args = process.argv.slice(2);
let binary = join(SRC, "build", "frond"), n = 2000000, reps = 7;
while (args.length) {
  const a = args.shift();
  if (a === "--ids") n = Number(args.shift());
  else if (a === "--reps") reps = Number(args.shift());
  else binary = a;
}

const freePort = () => new Promise((r) => {
  const s = createServer();
  s.listen(0, "127.0.0.1", () => {
    const p = s.address().port;
    s.close(() => r(p));
  });
});

const dir = mkdtempSync(join(tmpdir(), "frond-bench-node-"));
const store = `sqlite:///${dir}/frond.db`;
execFileSync(binary, ["tag", "create", "bench", "--step", "100000",
                      "--store", store]);
const port = await freePort();
const proc = spawn(binary, ["serve", "--listen", `127.0.0.1:${port}`,
                            "--resp-listen", "off", "--store", store,
                            "--data-dir", dir], { cwd: dir, stdio: "ignore" });
const url = `http://127.0.0.1:${port}`;
try {
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("frond serve did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  const client = new Client([url]);
  const seg = client.tag("bench");
  await seg.next();

  let sink = 0n;
  const loops = {
    "BigInt n++": (k) => {
      let c = 0n;
      for (let i = 0; i < k; i++) c++;
      sink += c;
    },
    "tryNext()": async (k) => {
      for (let i = 0; i < k; i++) sink = seg.tryNext() ?? await seg.next();
    },
    "await next()": async (k) => {
      for (let i = 0; i < k; i++) sink = await seg.next();
    },
  };
  const rows = {};
  for (const k of Object.keys(loops)) rows[k] = [];
  for (let r = 0; r < reps; r++)
    for (const [k, fn] of Object.entries(loops)) {
      const t0 = process.hrtime.bigint();
      await fn(n);
      rows[k].push(Number(process.hrtime.bigint() - t0) / n);
    }
  const median = (v) => {
    const s = [...v].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)];
  };
  const med = {};
  for (const k of Object.keys(rows)) med[k] = median(rows[k]);
  console.log(`Node ${process.versions.node}, ${n} IDs x ${reps} ` +
              "repetitions, medians");
  console.log("| counter | ns/ID | IDs/s | BigInt n++ / it |");
  console.log("| --- | ---: | ---: | ---: |");
  for (const [k, v] of Object.entries(med))
    console.log(`| ${k} | ${v.toFixed(1)} | ${(1e3 / v).toFixed(2)} M | ` +
                `${(med["BigInt n++"] / v).toFixed(2)} |`);
  const st = client.stats();
  const issued = st.tags.bench.issued;
  console.log("\nserver calls per million IDs over the run (ramp-up from " +
              `minRange 1000 included): ${(st.calls * 1e6 / issued)
                .toFixed(2)} (${st.calls} calls, ${issued} IDs)`);
  while (seg.stats().rangeSize < 1000000) await loops["tryNext()"](100000);
  const before = client.stats().calls;
  await loops["tryNext()"](5000000);
  const calls = client.stats().calls - before;
  console.log("server calls per million IDs at the steady rate (5,000,000 " +
              `IDs, ranges of ${seg.stats().rangeSize}): ` +
              `${(calls / 5).toFixed(2)}`);
  client.close();
  if (sink < 0n) console.log(sink);
} finally {
  proc.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}
