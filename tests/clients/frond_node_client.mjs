// SPDX-License-Identifier: Apache-2.0
// frond_node_client.mjs -- the Node client (clients/node) against real
// servers, driven by tests/integration/test_client_node.py.
//
//   node frond_node_client.mjs CLIENT_DIR basic URL
//   node frond_node_client.mjs CLIENT_DIR count N URL...
//   node frond_node_client.mjs CLIENT_DIR load MIN_RANGE RATE URL...
//   node frond_node_client.mjs CLIENT_DIR failover URL...
//   node frond_node_client.mjs CLIENT_DIR ranges URL
//
// basic: IDs (of "orders" and snowflake), formats, decoding, errors with their codes, bad input,
// timeouts, BAD_RESPONSE, a refused range's IDs counted as dropped,
// concurrency on the event loop, validity, the adaptive range size,
// strings. count: N IDs of "orders" and 10 snowflake
// IDs. load: IDs of "orders" (and a snowflake ID every 100), at most
// RATE a second (0: as fast as it goes), in ranges of MIN_RANGE, until stdin
// says "stop", printing "ranges R failovers F" as ranges arrive, so that
// the caller can restart or kill a server meanwhile. failover: 150 IDs of
// "t" in ranges of 100, "ready", and once stdin gives a line, 3000 more,
// every error counted. ranges: for each line of stdin, range("t", 1000),
// its answer or error code as a line. failover stops at 20 errors. Each mode ends with one JSON line:
// the IDs as strings, and the errors seen.
import { createServer } from "node:http";
import { createServer as createTcp } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [dir, mode, ...rest] = process.argv.slice(2);
const { Client, FrondError } = await import(join(dir, "index.js"));

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function expectError(code, fn, status) {
  let got;
  try {
    got = await fn();
  } catch (e) {
    check(e instanceof FrondError && e.code === code,
          `${fn}: ${e && e.stack}, expected ${code}`);
    if (status !== undefined)
      check(e.status === status, `${code}: status ${e.status}, not ${status}`);
    check(e.message && !e.message.startsWith(code) &&
          String(e).startsWith(`FrondError [${code}]: `) &&
          e.stack.startsWith(`FrondError [${code}]: `),
          `message ${e.message}, shown ${e}`);
    return e;
  }
  throw new Error(`${fn} gave ${got}, expected ${code}`);
}

function increasing(ids, what) {
  for (let i = 1; i < ids.length; i++)
    check(ids[i] > ids[i - 1], `${what}: ${ids[i]} after ${ids[i - 1]}`);
}

const listen = (srv) => new Promise((r) => srv.listen(0, "127.0.0.1", () =>
  r(srv.address().port)));

async function basic(url) {
  const out = [];
  const c = new Client([url]);
  const a = await c.next(), b = await c.next();
  check(typeof a === "bigint" && b > a && a > 2n ** 53n, `snowflake ${a} ${b}`);
  const batch = await c.nextBatch(100);
  increasing(batch, "nextBatch");
  check(batch[0] > b, "batch after next");
  out.push(a, b, ...batch);
  const d = await c.decode(a);
  check(d.id === String(a), `decode ${JSON.stringify(d)}`);
  const orders = c.tag("orders");
  check(c.tag("orders") === orders, "one handle per tag");
  const first = await orders.next();
  const seg = [first];
  for (let i = 1; i < 5000; i++) {
    const v = orders.tryNext() ?? await orders.next();
    seg.push(v);
  }
  for (let i = 1; i < seg.length; i++)
    check(seg[i] === seg[0] + BigInt(i), `consecutive: ${seg[i]} at ${i}`);
  out.push(...seg);
  const st = c.stats();
  check(st.tags.orders.issued === 5000 && st.calls <= 14,
        `stats ${JSON.stringify(st)}`);
  const u = await c.format("u", 3);
  check(u.length === 3 && u.every((s) => s.length === 26), `ulids ${u}`);
  check((await c.decode(u[0])).format === "ulid", "decode a ULID");
  // Many waiters at once on the event loop: every ID once.
  const many = await Promise.all(Array.from({ length: 3000 },
    () => c.tag("small").next()));
  check(new Set(many.map(String)).size === 3000, "concurrent next()");

  // Errors with their codes; bad input.
  await expectError("TAG_NOT_FOUND", () => c.tag("nope").next(), 404);
  await expectError("TAG_INVALID", () => c.tag(""));
  await expectError("TAG_INVALID", () => c.tag("x".repeat(129)));
  await expectError("TAG_INVALID", () => c.tag("a\u0001b").next(), 400);
  await expectError("COUNT_INVALID", () => c.nextBatch(0));
  await expectError("COUNT_INVALID", () => c.nextBatch("3"));
  await expectError("COUNT_INVALID", () => c.nextBatch(10 ** 9), 400);
  await expectError("ID_INVALID", () => c.decode("not-an-id"), 400);
  await expectError("FORMAT_NOT_FOUND", () => c.format("nosuch"), 404);
  await expectError("TAG_NOT_FOUND",
                    () => c.tag("a/../../v1/snowflake").next());
  const before = c.stats().calls;
  await expectError("TAG_NOT_FOUND", () => c.tag("nope2").next());
  check(c.stats().calls - before === 1, "a 404 was retried");
  await expectError("INVAL", () => new Client(["ftp://x"]));
  await expectError("INVAL", () => new Client([url], { timeout: 0 }));
  const te = await expectError("INVAL",
                               () => new Client([url], { timeout: 1.5 }));
  check(te.message.includes("whole milliseconds"), `timeout 1.5: ${te}`);
  await expectError("INVAL", () => c.tag("other", { preload: 1.5 }));

  // Strings instead of BigInts.
  const sc = new Client([url], { strings: true });
  const s1 = await sc.next(), s2 = await sc.tag("orders").next();
  check(typeof s1 === "string" && /^\d+$/.test(s1) &&
        typeof s2 === "string" && BigInt(s2) > seg[seg.length - 1],
        `strings ${s1} ${s2}`);
  out.push(BigInt(s1), BigInt(s2));
  sc.close();

  // Validity: a range older than it is dropped, its IDs skipped.
  const vc = new Client([url], { validity: 300, minRange: 100 });
  const vs = vc.tag("orders");
  const v1 = await vs.next();
  const t0 = Date.now();
  while (vs.stats().dropped < 99 && Date.now() - t0 < 30000)
    await new Promise((r) => setTimeout(r, 20));
  const v2 = await vs.next();
  check(vs.stats().dropped >= 99 && v2 >= v1 + 100n && vs.stats().ranges >= 2,
        `validity: ${v1} then ${v2}, ${JSON.stringify(vs.stats())}`);
  out.push(v1, v2);
  vc.close();
  // A validity longer than setTimeout's longest delay (2^31 - 1 ms, which
  // it replaces by 1 ms): ranges are kept. The 20 ms timer fires after
  // any 1 ms one set before it.
  const lc = new Client([url], { validity: 30 * 86400000, minRange: 100 });
  const ls = lc.tag("orders");
  const l1 = await ls.next();
  await new Promise((r) => setTimeout(r, 20));
  const l2 = await ls.next();
  check(l2 === l1 + 1n && ls.stats().dropped === 0,
        `a 30-day validity: ${l1} then ${l2}, ${JSON.stringify(ls.stats())}`);
  out.push(l1, l2);
  lc.close();
  // A fast reader doubles the range size up to maxRange.
  const fc = new Client([url], { minRange: 100, maxRange: 1600,
                                 target: 30000 });
  const fs = fc.tag("orders");
  for (let i = 0; i < 20000; i++) out.push(fs.tryNext() ?? await fs.next());
  check(fs.stats().rangeSize === 1600, `size ${JSON.stringify(fs.stats())}`);
  fc.close();

  c.close();
  await expectError("CLOSED", () => c.next());
  await expectError("CLOSED", () => c.tag("orders"));

  // No server: UNAVAILABLE after 1 + retries calls.
  const dead = createTcp();
  const deadPort = await listen(dead);
  await new Promise((r) => dead.close(r));
  const dc = new Client([`http://127.0.0.1:${deadPort}`],
                        { retries: 2, backoff: 10 });
  const e = await expectError("UNAVAILABLE", () => dc.next(), 0);
  check(e.message.includes(String(deadPort)), `names the server: ${e}`);
  check(dc.stats().calls === 3, `calls ${dc.stats().calls}`);
  // A server that never answers: TIMEOUT.
  const silent = createTcp(() => {});
  const held = [];
  silent.on("connection", (s) => held.push(s));
  const silentPort = await listen(silent);
  const tc = new Client([`http://127.0.0.1:${silentPort}`],
                        { timeout: 300, retries: 1, backoff: 10 });
  const t1 = Date.now();
  await expectError("TIMEOUT", () => tc.next());
  check(Date.now() - t1 < 10000, "a timeout took too long");
  await expectError("TIMEOUT", () => tc.tag("orders").next());
  for (const s of held) s.destroy();
  silent.close();
  // A load that ends past the call's deadline with a range (a server
  // that refuses fifteen sizes, slowly, then answers): the call takes an
  // ID of it rather than fail with TIMEOUT. Each answer 300 ms, against
  // 3 s an attempt.
  let refusals = 0;
  const slow = createServer((req, res) => {
    const count = Number(new URL(req.url, "http://x").searchParams
      .get("count"));
    setTimeout(() => {
      res.setHeader("Content-Type", "application/json");
      if (refusals++ < 15) {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: { code: "COUNT_INVALID",
                                          message: "too many" } }));
      } else {
        res.end(JSON.stringify({ tag: "t", start: "5",
                                 end: String(5 + count), count }));
      }
    }, 300);
  });
  const slowPort = await listen(slow);
  const lateC = new Client([`http://127.0.0.1:${slowPort}`],
                           { timeout: 3000, retries: 0, backoffMax: 0,
                             minRange: 100000, maxRange: 100000 });
  const late = await lateC.tag("t").next(); // deadline 4 s, load 4.8 s
  check(late === 5n && refusals === 16, `a late range: ${late}, ${refusals}`);
  await expectError("INVAL", () => new Client([url], { timeout: 2 ** 31 }));
  lateC.close();
  slow.close();
  slow.closeAllConnections();
  // An answer that is not JSON: BAD_RESPONSE.
  const junk = createServer((req, res) => res.end("<html>not frond</html>"));
  const junkPort = await listen(junk);
  const jc = new Client([`http://127.0.0.1:${junkPort}`]);
  await expectError("BAD_RESPONSE", () => jc.next(), 200);
  await expectError("BAD_RESPONSE", () => jc.tag("orders").next());
  junk.close();
  junk.closeAllConnections();
  // A range below one the same server leased before (every answer here
  // is [1001, 1011)): refused with BAD_RESPONSE, its IDs counted as
  // dropped, as the Go and Java clients count them.
  let answers = 0;
  const below = createServer((req, res) => {
    answers++;
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ tag: "t", start: "1001", end: "1011",
                             count: 10 }));
  });
  const belowPort = await listen(below);
  const bc = new Client([`http://127.0.0.1:${belowPort}`],
                        { retries: 0, minRange: 10, maxRange: 10,
                          validity: 0 });
  const bs = bc.tag("t");
  const bids = [];
  for (let i = 0; i < 10; i++) bids.push(bs.tryNext() ?? await bs.next());
  check(bids.join() === Array.from({ length: 10 },
    (_, i) => String(1001 + i)).join(), `a range's IDs: ${bids}`);
  // The preload (at 1009) was refused; the call's load, if the preload
  // had ended, too: the call fails with one's error.
  for (let k = 0; k < 2; k++) {
    const be = await expectError("BAD_RESPONSE", () => bs.next());
    check(be.message.includes("below 1011"), `refused: ${be.message}`);
  }
  const bst = bs.stats();
  check(answers >= 3, `${answers} answers: the test tests nothing`);
  check(bst.ranges === 1 && bst.issued === 10 && bst.buffered === 0 &&
        bst.dropped === 10 * (answers - 1),
        `stats ${JSON.stringify(bst)} after ${answers} answers: the ` +
        `${answers - 1} refused ranges' IDs not all dropped`);
  bc.close();
  below.close();
  below.closeAllConnections();
  return { ids: out.map(String), errors: [] };
}

async function count(n, urls) {
  const c = new Client(urls, { minRange: 100 });
  const t = c.tag("orders");
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(t.tryNext() ?? await t.next());
  increasing(ids, "count");
  ids.push(...await c.nextBatch(10));
  c.close();
  return { ids: ids.map(String), errors: [] };
}

async function load(minRange, rate, urls) {
  const c = new Client(urls, { minRange, maxRange: minRange, retries: 8,
                               backoff: 20, timeout: 2000 });
  const t = c.tag("orders");
  let stop = false;
  const rl = createInterface({ input: process.stdin });
  rl.on("line", (l) => { if (l.trim() === "stop") stop = true; });
  rl.on("close", () => { stop = true; });
  const ids = [], errors = [];
  let ranges = -1, n = 0;
  const t0 = Date.now();
  const deadline = t0 + 120000;
  while (!stop && Date.now() < deadline) {
    try {
      ids.push(t.tryNext() ?? await t.next());
      if (++n % 100 === 0) {
        ids.push(await c.next());
        // Let stdin and the timers in; at most rate IDs a second.
        const wait = rate ? t0 + n * 1000 / rate - Date.now() : 0;
        await new Promise((r) => (wait > 0 ? setTimeout(r, wait)
                                           : setImmediate(r)));
      }
    } catch (e) {
      errors.push(String(e));
      await new Promise((r) => setTimeout(r, 10));
    }
    const st = c.stats();
    if (st.tags.orders.ranges !== ranges) {
      ranges = st.tags.orders.ranges;
      console.log(`ranges ${ranges} failovers ${st.failovers}`);
    }
  }
  rl.close();
  const segIds = ids.filter((i) => i < 2n ** 40n);
  // In order while one server serves; servers of one store answer from
  // their own buffers, so not across a failover.
  if (urls.length === 1) increasing(segIds, "segment IDs under load");
  const st = c.stats();
  c.close();
  return { ids: ids.map(String), errors, failovers: st.failovers };
}

async function failover(urls) {
  const c = new Client(urls, { minRange: 100, maxRange: 100, retries: 2,
                               backoff: 10 });
  const t = c.tag("t");
  const ids = [], errors = [];
  const take = async (n) => {
    for (let i = 0; i < n; i++) {
      try {
        ids.push(t.tryNext() ?? await t.next());
      } catch (e) {
        errors.push({ code: e.code, message: e.message });
        if (errors.length >= 20) return; // it will not come back
      }
    }
  };
  await take(150);
  console.log("ready");
  const rl = createInterface({ input: process.stdin });
  await new Promise((r) => rl.once("line", r));
  rl.close();
  await take(3000);
  c.close();
  return { ids: ids.map(String), errors };
}

async function ranges(url) {
  const c = new Client([url], { retries: 0 });
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.trim() === "stop") break;
    try {
      const r = await c.range("t", 1000);
      console.log(JSON.stringify({ start: String(r.start),
                                   end: String(r.end) }));
    } catch (e) {
      console.log(JSON.stringify({ code: e.code, message: e.message }));
    }
  }
  rl.close();
  return { ids: [], errors: [] };
}

const timer = setTimeout(() => {
  console.log(`${mode}: no result within 180 s`);
  process.exit(1);
}, 180000);
try {
  let out;
  if (mode === "basic") out = await basic(rest[0]);
  else if (mode === "count") out = await count(Number(rest[0]), rest.slice(1));
  else if (mode === "failover") out = await failover(rest);
  else if (mode === "ranges") out = await ranges(rest[0]);
  else if (mode === "load")
    out = await load(Number(rest[0]), Number(rest[1]), rest.slice(2));
  else throw new Error(`unknown mode ${mode}`);
  console.log(JSON.stringify(out));
  clearTimeout(timer);
} catch (e) {
  console.log(e && e.stack ? e.stack : String(e));
  process.exit(1);
}
