// SPDX-License-Identifier: Apache-2.0
// node_clients.mjs -- JavaScript clients against a running frond serve,
// run by tests/integration/test_clients.py.
//
//   node node_clients.mjs SUITE CLIENT RESP_PORT HTTP_PORT [PASSWORD]
//
// SUITE is where the package tests/clients is installed (scripts/deps.sh
// test installs it globally as frond-client-suite, at the versions its
// npm-shrinkwrap.json pins): the clients are loaded from there.
// CLIENT is one of ioredis5, ioredis6, ioredis6-resp2, redis4, redis6,
// redis6-resp2 (a Redis client and the protocol it speaks), or fetch (the
// HTTP API through Node's fetch, with a streamed, chunked body). Each
// checks what its users rely on: IDs exact (strings that match the
// server's own decode, no two alike), INCR an integer, errors as errors
// with their code, pipelined commands answered in order. It prints one
// JSON object (the IDs it got, for the caller to check across clients)
// and exits 0, or prints why and exits 1.
import { createRequire } from "node:module";
import { join } from "node:path";

const [suiteDir, client, respPort, httpPort, password] =
    process.argv.slice(2);
const require = createRequire(join(suiteDir, "package.json"));
const TWO53 = 2n ** 53n;

function fail(msg) {
  throw new Error(`${client}: ${msg}`);
}

function check(cond, msg) {
  if (!cond) fail(msg);
}

// IDs as the server sent them: strings of digits, unique, increasing.
function ids(reply, n, what) {
  check(Array.isArray(reply) && reply.length === n,
        `${what}: ${n} IDs expected, got ${JSON.stringify(reply)}`);
  for (const id of reply)
    check(typeof id === "string" && /^[0-9]+$/.test(id),
          `${what}: an ID that is not a string of digits: ` +
          `${typeof id} ${id}`);
  for (let i = 1; i < n; i++)
    check(BigInt(reply[i]) > BigInt(reply[i - 1]),
          `${what}: not increasing or not unique: ${reply.join(" ")}`);
  return reply;
}

// ID.DECODE's reply as an object, whatever shape the client gives: a
// flat array (RESP2), an object or a Map (RESP3).
function fields(reply) {
  if (reply instanceof Map) return Object.fromEntries(reply);
  if (Array.isArray(reply)) {
    const o = {};
    for (let i = 0; i + 1 < reply.length; i += 2) o[reply[i]] = reply[i + 1];
    return o;
  }
  return reply;
}

async function expectError(promise, code, what) {
  try {
    const r = await promise;
    fail(`${what}: a reply (${JSON.stringify(r)}) instead of -${code}`);
  } catch (e) {
    check(e instanceof Error && String(e.message).startsWith(code + " "),
          `${what}: error ${e && e.message}, expected ${code}`);
    return e;
  }
}

// The checks, over one client's way to send a command (cmd), INCR (incr),
// a batch of commands sent at once (pipeline, resolving to replies or
// Error objects in order) and a transaction (multi: MULTI ... EXEC, the
// client's own multi(), resolving to the replies or rejecting).
async function suite({ cmd, incr, pipeline, multi }) {
  const out = { snowflake: [], segment: [], incr: [] };
  // Snowflake IDs are above 2^53: a client reading integers would round
  // them, and five of one millisecond would come out as one number.
  const sf = ids(await cmd("ID.SNOWFLAKE", "5"), 5, "ID.SNOWFLAKE 5");
  check(BigInt(sf[0]) > TWO53, `snowflake ID ${sf[0]} below 2^53?`);
  out.snowflake.push(...sf);
  for (const id of sf) {
    const f = fields(await cmd("ID.DECODE", id));
    check(f.id === id, `ID.DECODE ${id}: id ${JSON.stringify(f.id)}`);
    check(Number(f.node) >= 0 && typeof f.time === "string",
          `ID.DECODE ${id}: ${JSON.stringify(f)}`);
  }
  // INCR answers an integer, as Redis does.
  const a = await incr("order"), b = await incr("order");
  check(typeof a === "number" && typeof b === "number" && b > a,
        `INCR: ${typeof a} ${a}, then ${b}`);
  out.incr.push(a, b);
  const next = ids(await cmd("ID.NEXT", "order", "3"), 3, "ID.NEXT");
  check(BigInt(next[0]) > BigInt(b), `ID.NEXT ${next} not after INCR ${b}`);
  out.segment.push(...next);
  // Errors reach the client as errors, with their code.
  await expectError(incr("nope"), "TAG_NOT_FOUND", "INCR nope");
  await expectError(cmd("ID.NEXT", "order", "0"), "COUNT_INVALID",
                    "ID.NEXT order 0");
  // And the connection goes on.
  check(typeof (await incr("order")) === "number", "INCR after an error");
  // Pipelining: 300 commands in one batch, one of them failing, answered
  // in order.
  const batch = [];
  for (let i = 0; i < 300; i++)
    batch.push(i === 150 ? ["INCR", "nope"]
               : i % 3 === 0 ? ["ID.SNOWFLAKE", "2"] : ["INCR", "order"]);
  const replies = await pipeline(batch);
  check(replies.length === 300, `pipeline: ${replies.length} replies`);
  let last = b;
  replies.forEach((r, i) => {
    if (i === 150) {
      check(r instanceof Error && r.message.startsWith("TAG_NOT_FOUND "),
            `pipeline [150]: ${r}`);
    } else if (i % 3 === 0) {
      out.snowflake.push(...ids(r, 2, `pipeline [${i}]`));
    } else {
      check(typeof r === "number" && r > last,
            `pipeline [${i}]: ${r} after ${last}`);
      last = r;
      out.incr.push(r);
    }
  });
  // A transaction: nothing runs before EXEC, then all in order.
  const tx = [];
  for (let i = 0; i < 50; i++) tx.push(["INCR", "order"]);
  tx.push(["ID.NEXT", "order", "3"]);
  const got = await multi(tx);
  check(Array.isArray(got) && got.length === 51,
        `multi: ${JSON.stringify(got)}`);
  for (let i = 0; i < 50; i++) {
    check(typeof got[i] === "number" && got[i] > last,
          `multi [${i}]: ${got[i]} after ${last}`);
    last = got[i];
    out.incr.push(got[i]);
  }
  const txIds = ids(got[50], 3, "multi ID.NEXT");
  check(BigInt(txIds[0]) > BigInt(last), `multi ID.NEXT ${txIds} not after ` +
        `${last}`);
  out.segment.push(...txIds);
  // A transaction refused while queueing (an unknown command) runs none of
  // its commands: the next INCR follows the one before it.
  const before = await incr("order");
  let refused = null;
  try {
    await multi([["INCR", "order"], ["NOSUCH"], ["INCR", "order"]]);
  } catch (e) {
    refused = e;
  }
  check(refused instanceof Error &&
        /EXECABORT|unknown command/.test(String(refused.message)),
        `a refused transaction: ${refused}`);
  const after = await incr("order");
  check(after === before + 1,
        `after a refused transaction INCR gave ${after}, not ${before + 1}:` +
        " IDs were burnt");
  out.incr.push(before, after);
  out.unknown = 1; // NOSUCH, on purpose
  return out;
}

async function ioredis(mod, protocol) {
  const Redis = require(mod);
  const opts = { host: "127.0.0.1", port: Number(respPort), lazyConnect: true,
                 maxRetriesPerRequest: 0, connectTimeout: 10000 };
  if (password) opts.password = password;
  if (protocol) opts.protocol = protocol;
  const r = new Redis(opts);
  await r.connect();
  try {
    return await suite({
      cmd: (...a) => r.call(...a),
      incr: (k) => r.incr(k),
      pipeline: async (cmds) => {
        const p = r.pipeline();
        for (const c of cmds) p.call(...c);
        return (await p.exec()).map(([err, res]) => err || res);
      },
      multi: async (cmds) => {
        const m = r.multi();
        for (const c of cmds) m.call(...c);
        const res = await m.exec();
        if (res === null) throw new Error("EXEC answered nil");
        return res.map(([err, v]) => err || v);
      },
    });
  } finally {
    r.disconnect();
  }
}

async function nodeRedis(mod, resp) {
  const { createClient } = require(mod);
  const opts = { socket: { host: "127.0.0.1", port: Number(respPort),
                           connectTimeout: 10000, reconnectStrategy: false } };
  if (password) opts.password = password;
  if (resp) opts.RESP = resp;
  const c = createClient(opts);
  c.on("error", () => {});
  await c.connect();
  try {
    return await suite({
      cmd: (...a) => c.sendCommand(a),
      incr: (k) => c.incr(k),
      // Commands issued in one tick go out in one write.
      pipeline: (cmds) => Promise.all(cmds.map(
          (a) => (a[0] === "INCR" ? c.incr(a[1]) : c.sendCommand(a))
                     .catch((e) => e))),
      multi: (cmds) => {
        const m = c.multi();
        for (const a of cmds) m.addCommand(a);
        return m.exec();
      },
    });
  } finally {
    await c.quit();
  }
}

async function viaFetch() {
  const base = `http://127.0.0.1:${httpPort}`;
  const auth = password ? { Authorization: `Bearer ${password}` } : {};
  const out = { snowflake: [], segment: [], incr: [] };
  // A tag created with a streamed body: fetch sends it chunked.
  const tag = `fetch-${process.pid}`;
  const body = new ReadableStream({
    start(ctl) {
      const enc = new TextEncoder();
      for (const piece of [`{"tag":"${tag}",`, '"step":', "50}"])
        ctl.enqueue(enc.encode(piece));
      ctl.close();
    },
  });
  let r = await fetch(`${base}/v1/tags`, {
    method: "POST", body, duplex: "half",
    headers: { "Content-Type": "application/json", ...auth },
  });
  const created = await r.json();
  check(r.status === 201 && created.tag === tag,
        `POST /v1/tags with a stream body: ${r.status} ` +
        JSON.stringify(created));
  r = await fetch(`${base}/v1/snowflake?count=5`, { headers: auth });
  const sf = ids((await r.json()).ids, 5, "GET /v1/snowflake?count=5");
  for (const id of sf) {
    const d = await (await fetch(`${base}/v1/decode/${id}`,
                                 { headers: auth })).json();
    check(d.id === id, `/v1/decode/${id}: ${JSON.stringify(d)}`);
  }
  out.snowflake.push(...sf);
  r = await fetch(`${base}/v1/segment/${tag}?count=3`, { headers: auth });
  ids((await r.json()).ids, 3, "GET /v1/segment");
  r = await fetch(`${base}/v1/segment/nope`, { headers: auth });
  const e = await r.json();
  check(r.status === 404 && e.error.code === "TAG_NOT_FOUND",
        `unknown tag: ${r.status} ${JSON.stringify(e)}`);
  r = await fetch(`${base}/v1/tags/${tag}`, { method: "DELETE",
                                              headers: auth });
  check(r.status === 204 && (await r.text()) === "", `DELETE: ${r.status}`);
  return out;
}

// The package and version each client is, for the report.
const packages = {
  ioredis5: "ioredis5", ioredis6: "ioredis", "ioredis6-resp2": "ioredis",
  redis4: "redis4", redis6: "redis6", "redis6-resp2": "redis6",
};

const runs = {
  ioredis5: () => ioredis("ioredis5"),
  ioredis6: () => ioredis("ioredis"),
  "ioredis6-resp2": () => ioredis("ioredis", 2),
  redis4: () => nodeRedis("redis4"),
  redis6: () => nodeRedis("redis6"),
  "redis6-resp2": () => nodeRedis("redis6", 2),
  fetch: viaFetch,
};

const timer = setTimeout(() => {
  console.log(`${client}: no result within 60 s`);
  process.exit(1);
}, 60000);
try {
  check(runs[client] !== undefined, "unknown client");
  const out = await runs[client]();
  const pkg = packages[client]
      ? require(`${packages[client]}/package.json`)
      : { name: "node fetch", version: process.versions.node };
  console.log(JSON.stringify({ client, version: `${pkg.name} ${pkg.version}`,
                               ...out }));
  clearTimeout(timer);
} catch (e) {
  console.log(e && e.stack ? e.stack : String(e));
  process.exit(1);
}
