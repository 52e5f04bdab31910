// SPDX-License-Identifier: Apache-2.0
// frond-client -- the Node client of Frond, the unique-ID service, over
// its HTTP /v1 API: snowflake IDs, and segment IDs handed out in the
// process from ranges the server leases (GET /v1/segment/{tag}/range).
//
// Node 20's fetch, no dependency. IDs are BigInts (64-bit IDs do not fit
// a Number), or decimal strings with { strings: true }.
//
// Every call goes to the current server. A connection error, a timeout
// or a 503 moves the client to the next server and retries after a
// backoff with full jitter (base 50 ms, doubling, capped at 1 s), up to
// `retries` times; a 4xx is the caller's mistake and is never retried.
//
// A segment handle keeps two buffers: the current range and the next,
// fetched in the background once less than `preload` of the current one
// is left. The range size adapts to the rate (doubling when a range lasts
// less than `target`, halving past twice that, within [minRange,
// maxRange]); a range older than `validity` is dropped, its IDs skipped.
// Ranges keep their order per server: servers of one store answer from
// their own buffers, so ranges from two of them are unique but not in
// order. That the servers share one store is checked: the client pins the
// first store a range answer names ("store", or Frond-Store) and refuses
// a range of another with STORE_MISMATCH, failing over as for a 503; with
// several servers listed, one that names no store is refused too.
// Node runs JavaScript on one thread: tryNext() is synchronous and
// answers from the buffer (null when it is empty, a load started), and
// next() is a Promise that resolves at once from the buffer or after the
// next range arrives.

export const VERSION = "0.1.0";
const USER_AGENT = `frond-node/${VERSION}`;
const DEFAULT_SERVERS = ["http://127.0.0.1:8080"];
const TAG_MAX = 128;
const INT64_MAX = 2n ** 63n - 1n;
const DECIMAL = /^[0-9]{1,19}$/;
const STORE = /^[0-9a-f]{32}$/;

// A range bound: a JSON string of 1 to 19 decimal digits within int64,
// nothing else (a number above 2^53 was rounded on its way; BigInt("")
// is 0n).
function decimal(v, what, base) {
  if (typeof v !== "string" || !DECIMAL.test(v) || BigInt(v) > INT64_MAX)
    throw new FrondError("BAD_RESPONSE", `${base}: a range's ${what} must ` +
      `be a string of decimal digits within int64, not ${JSON.stringify(v)}`);
  return BigInt(v);
}

// A call that did not give IDs. code: Frond's stable code (TAG_NOT_FOUND,
// SEGMENT_UNAVAILABLE, COUNT_INVALID, ...) or the client's own:
// UNAVAILABLE (no server answered), TIMEOUT, BAD_RESPONSE (an answer that
// does not parse, a range below one the same server leased before),
// STORE_MISMATCH (no server gave a range of the pinned store, or several
// are listed and one names no store), CLOSED, INVAL.
// message: what happened; status: the HTTP status, 0 when there was none.
// Shown as Node shows its own coded errors: FrondError [CODE]: message.
export class FrondError extends Error {
  constructor(code, message, status = 0) {
    super(message);
    this.name = "FrondError";
    this.code = code;
    this.status = status;
    if (typeof this.stack === "string")
      this.stack = this.stack.replace(/^FrondError/, `FrondError [${code}]`);
  }

  toString() {
    return `FrondError [${this.code}]: ${this.message}`;
  }
}

function parseServers(servers) {
  if (servers === undefined || servers === null) {
    const env = (process.env.FROND_SERVERS || "").split(",")
      .map((s) => s.trim()).filter((s) => s);
    servers = env.length ? env : DEFAULT_SERVERS;
  }
  if (typeof servers === "string") servers = [servers];
  if (!Array.isArray(servers) || servers.length === 0)
    throw new FrondError("INVAL", "no server given");
  return servers.map((s) => {
    let u;
    try {
      u = new URL(s);
    } catch {
      u = null;
    }
    if (!u || (u.protocol !== "http:" && u.protocol !== "https:"))
      throw new FrondError("INVAL",
        `a server is http://host:port or https://host:port, not ${s}`);
    return u.origin + u.pathname.replace(/\/+$/, "");
  });
}

function checkTag(name) {
  if (typeof name !== "string" || name === "" ||
      Buffer.byteLength(name) > TAG_MAX)
    throw new FrondError("TAG_INVALID",
      `a tag is a string of 1 to ${TAG_MAX} bytes, not ${String(name)}`);
}

function checkCount(n) {
  if (!Number.isSafeInteger(n) || n < 1)
    throw new FrondError("COUNT_INVALID",
      `count must be an integer of at least 1, not ${String(n)}`);
}

function positive(v, what) {
  if (typeof v !== "number" || !(v >= 0))
    throw new FrondError("INVAL", `${what} must be a number >= 0`);
  return v;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The longest delay of setTimeout and AbortSignal.timeout: a longer one
// fires after 1 ms.
const TIMER_MAX = 2 ** 31 - 1;

export class Client {
  // servers: base URLs, tried in order; default FROND_SERVERS
  // (comma-separated), else http://127.0.0.1:8080. Options (times in
  // milliseconds): timeout 2000 per attempt, retries 3, backoff 50,
  // backoffMax 1000, token, strings (IDs as decimal strings); and the
  // defaults of tag(): minRange 1000, maxRange 1000000, preload 0.2,
  // target 10000, validity 60000 (0: never).
  constructor(servers, options = {}) {
    this.servers = parseServers(servers);
    const o = options;
    this.timeout = positive(o.timeout ?? 2000, "timeout");
    // AbortSignal.timeout takes whole milliseconds (any other value fails
    // every call, reported as UNAVAILABLE), and above 2^31 - 1 aborts
    // after 1 ms (every call a TIMEOUT).
    if (!Number.isInteger(this.timeout) || this.timeout > TIMER_MAX)
      throw new FrondError("INVAL", "timeout is whole milliseconds, at " +
        `most ${TIMER_MAX}, not ${this.timeout}` +
        (this.timeout < 100 ? " (seconds given for milliseconds?)" : ""));
    this.retries = positive(o.retries ?? 3, "retries");
    this.backoff = positive(o.backoff ?? 50, "backoff");
    this.backoffMax = positive(o.backoffMax ?? 1000, "backoffMax");
    if (this.timeout === 0 || !Number.isInteger(this.retries))
      throw new FrondError("INVAL", "timeout > 0, retries an integer >= 0");
    this.headers = { "User-Agent": USER_AGENT, Accept: "application/json" };
    if (o.token) this.headers.Authorization = `Bearer ${o.token}`;
    this.id = o.strings ? (v) => v.toString() : (v) => v;
    this.defaults = {
      minRange: o.minRange ?? 1000, maxRange: o.maxRange ?? 1000000,
      preload: o.preload ?? 0.2, target: o.target ?? 10000,
      validity: o.validity ?? 60000,
    };
    this.cur = 0;
    this.tags = new Map();
    this.closed = false;
    this.counts = { calls: 0, failovers: 0, retries: 0 };
    this.store = null; // { id, at }: the first store a range named
  }

  failOver(i) {
    if (this.cur === i) {
      this.cur = (i + 1) % this.servers.length;
      this.counts.failovers++;
    }
  }

  // GET path (under /v1) with query: the decoded JSON body. check(body,
  // i, headers), when given, may refuse a 200 answer of server i with
  // STORE_MISMATCH: the call then fails over as for a 503.
  async get(path, query, check) {
    if (this.closed) throw new FrondError("CLOSED", "the client is closed");
    const qs = query ? "?" + new URLSearchParams(query).toString() : "";
    let last = null, mismatch = null;
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) {
        this.counts.retries++;
        await sleep(Math.random() * Math.min(this.backoffMax,
          this.backoff * 2 ** (attempt - 1)));
      }
      const i = this.cur;
      const base = this.servers[i];
      this.counts.calls++;
      let res, body;
      try {
        res = await fetch(base + path + qs, {
          headers: this.headers, signal: AbortSignal.timeout(this.timeout),
        });
        body = await res.text();
      } catch (e) {
        const timeout = e && (e.name === "TimeoutError" ||
                              e.name === "AbortError");
        last = new FrondError(timeout ? "TIMEOUT" : "UNAVAILABLE",
          timeout ? `${base}: no answer within ${this.timeout} ms`
            : `${base}: ${e && e.cause ? e.cause.message || e.cause.code
              : e}`);
        this.failOver(i);
        continue;
      }
      if (res.status === 200) {
        let got;
        try {
          got = JSON.parse(body);
        } catch {
          throw new FrondError("BAD_RESPONSE",
            `${base}${path} answered ${JSON.stringify(body.slice(0, 200))}`,
            200);
        }
        if (!check) return got;
        try {
          return check(got, i, res.headers);
        } catch (e) {
          if (!(e instanceof FrondError) || e.code !== "STORE_MISMATCH")
            throw e;
          last = mismatch = e;
          this.failOver(i);
          continue;
        }
      }
      let err;
      try {
        const e = JSON.parse(body).error;
        err = new FrondError(String(e.code), String(e.message ?? ""),
          res.status);
      } catch {
        err = new FrondError("BAD_RESPONSE", `${base} answered ` +
          `${res.status} ${JSON.stringify(body.slice(0, 200))}`, res.status);
      }
      if (res.status !== 503) throw err;
      last = err;
      this.failOver(i);
    }
    // A server of another store outweighs one that did not answer.
    throw mismatch ?? last;
  }

  // One snowflake ID.
  async next() {
    return (await this.nextBatch(1))[0];
  }

  // n snowflake IDs, increasing.
  async nextBatch(n) {
    checkCount(n);
    return ids(await this.get("/v1/snowflake", { count: n }), n)
      .map(this.id);
  }

  // The segment handle of tag name: the same object for the same name.
  // Options (minRange, maxRange, preload, target, validity) default to
  // the client's and count on the first call only.
  tag(name, options = {}) {
    checkTag(name);
    if (this.closed) throw new FrondError("CLOSED", "the client is closed");
    let s = this.tags.get(name);
    if (!s) {
      s = new Segment(this, name, { ...this.defaults, ...options });
      this.tags.set(name, s);
    }
    return s;
  }

  // count consecutive IDs of tag name leased to the caller:
  // { start, end } as BigInts, the IDs start <= id < end.
  async range(name, count) {
    const { start, end } = await this.lease(name, count);
    return { start, end };
  }

  // range(), and the index of the server that gave it: { start, end, at }.
  async lease(name, count) {
    checkTag(name);
    checkCount(count);
    return this.get(`/v1/segment/${encodeURIComponent(name)}/range`,
      { count }, (got, i, headers) => {
        const base = this.servers[i];
        if (!got || typeof got !== "object")
          throw new FrondError("BAD_RESPONSE",
            `${base}: a range answer that is not an object`);
        const start = decimal(got.start, "start", base);
        const end = decimal(got.end, "end", base);
        if (end - start !== BigInt(count))
          throw new FrondError("BAD_RESPONSE",
            `${base}: asked for ${count} IDs of ${name}, got ` +
            `[${start}, ${end})`);
        this.checkStore(got.store, headers.get("frond-store"), i);
        return { start, end, at: i };
      });
  }

  // The store server i names in a range answer, against the pinned one.
  checkStore(body, header, i) {
    const base = this.servers[i];
    if (body !== undefined && header !== null && body !== header)
      throw new FrondError("BAD_RESPONSE", `${base} names store ` +
        `${JSON.stringify(body)} in the answer and ${header} in Frond-Store`);
    const st = body !== undefined ? body : header;
    if (st === null || st === undefined) {
      if (this.servers.length > 1)
        throw new FrondError("STORE_MISMATCH", `${base} does not name its ` +
          "store (a server older than the store identity): with several " +
          "servers listed, ranges are taken only from servers that name " +
          "one, so that servers on different stores are never mixed");
      return;
    }
    if (typeof st !== "string" || !STORE.test(st))
      throw new FrondError("BAD_RESPONSE", `${base} names its store ` +
        `${JSON.stringify(st)}, not 32 lowercase hex digits`);
    if (this.store === null) {
      this.store = { id: st, at: i };
      return;
    }
    if (st !== this.store.id)
      throw new FrondError("STORE_MISMATCH", `${base} serves store ${st}, ` +
        `but ${this.servers[this.store.at]} served store ${this.store.id}: ` +
        "servers on different stores hand out the same IDs; its range is " +
        "not used");
  }

  // count strings of the server's format name (format.<name>).
  async format(name, count = 1) {
    checkCount(count);
    const got = await this.get(`/v1/format/${encodeURIComponent(name)}`,
      { count });
    if (!got || !Array.isArray(got.ids) || got.ids.length !== count)
      throw new FrondError("BAD_RESPONSE",
        `asked for ${count} strings, got ${JSON.stringify(got)}`);
    return got.ids.map(String);
  }

  // The fields of an ID or ID string, as GET /v1/decode gives them.
  async decode(s, format) {
    const got = await this.get(
      `/v1/decode/${encodeURIComponent(String(s))}`,
      format ? { format } : undefined);
    if (!got || typeof got !== "object")
      throw new FrondError("BAD_RESPONSE", `decode answered ${got}`);
    return got;
  }

  // Calls made to the servers (every attempt), failovers, retries, and
  // per tag: ranges, IDs issued, dropped, the next range's size, buffered.
  stats() {
    const tags = {};
    for (const [n, s] of this.tags) tags[n] = s.stats();
    return { ...this.counts, tags };
  }

  // Drop every buffered range (its IDs are skipped, never reused);
  // further calls fail with CLOSED.
  close() {
    this.closed = true;
    for (const s of this.tags.values()) s.close();
    this.tags.clear();
  }
}

function ids(got, n) {
  let out;
  try {
    out = got.ids.map((i) => BigInt(i));
  } catch {
    throw new FrondError("BAD_RESPONSE", `no ids in ${JSON.stringify(got)}`);
  }
  if (out.length !== n)
    throw new FrondError("BAD_RESPONSE",
      `asked for ${n} IDs, got ${out.length}`);
  return out;
}

export class Segment {
  constructor(client, name, o) {
    if (!Number.isSafeInteger(o.minRange) || !Number.isSafeInteger(
      o.maxRange) || o.minRange < 1 || o.minRange > o.maxRange)
      throw new FrondError("INVAL", "1 <= minRange <= maxRange");
    if (!(o.preload > 0 && o.preload < 1) || !(o.target > 0) ||
        !(o.validity >= 0))
      throw new FrondError("INVAL",
        "0 < preload < 1, target > 0 and validity >= 0");
    this.name = name;
    this.client = client;
    this.o = o;
    this.pos = 0n; // the current range [pos, end), from start, since since
    this.end = 0n;
    this.start = 0n;
    this.since = 0;
    this.preloadAt = -1n;
    this.size = o.minRange; // of the next range to ask for
    this.gen = 0; // ranges installed
    this.sized = 0; // the gen size was last adapted to
    this.cap = null; // the server's bound, once it refused a size
    this.nextRange = null; // { start, end, fetched }
    this.hi = new Map(); // server index: end of its last range
    this.loading = null; // the Promise of the load on its way
    this.timer = null;
    this.closed = false;
    this.counts = { ranges: 0, issued: 0n, dropped: 0n };
  }

  // The next ID if the buffers hold one, else null (a load is started).
  tryNext() {
    const p = this.pos;
    if (p < this.end) {
      this.pos = p + 1n;
      if (p === this.preloadAt) this.load();
      return this.client.id(p);
    }
    return this.switch();
  }

  // The tag's next ID: at once from the buffers, else once a range came.
  async next() {
    const deadline = Date.now() + (this.client.timeout +
      this.client.backoffMax) * (this.client.retries + 1) + 1000;
    for (;;) {
      const v = this.tryNext(); // a range that came late is still used
      if (v !== null) return v;
      if (this.closed) throw new FrondError("CLOSED", "the client is closed");
      if (Date.now() > deadline)
        throw new FrondError("TIMEOUT",
          `no range of ${this.name} within the client's retries`);
      const err = await this.loading;
      if (err && this.pos >= this.end && !this.nextRange) throw err;
    }
  }

  // The current range is used up: make the next current, or start its
  // load and answer null.
  switch() {
    for (;;) {
      if (this.closed) return null;
      const n = this.nextRange;
      if (n === null) {
        this.load();
        return null;
      }
      this.nextRange = null;
      if (this.o.validity && Date.now() - n.fetched > this.o.validity) {
        this.counts.dropped += n.end - n.start;
        continue;
      }
      this.install(n);
      const p = this.pos;
      this.pos = p + 1n;
      if (p === this.preloadAt) this.load();
      return this.client.id(p);
    }
  }

  install(n) {
    this.gen++;
    this.counts.issued += this.pos - this.start;
    this.counts.dropped += this.end - this.pos;
    this.start = this.pos = n.start;
    this.end = n.end;
    this.since = Date.now();
    const size = Number(n.end - n.start);
    let at = n.end - BigInt(Math.max(1, Math.ceil(size * this.o.preload)));
    if (at < n.start) at = n.start;
    this.preloadAt = at;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.o.validity) {
      // In steps of at most TIMER_MAX: a longer validity (30 days, or
      // Infinity) would otherwise retire each range 1 ms after it came.
      // Always a timer, never at once: the caller takes an ID after this.
      const until = n.fetched + this.o.validity;
      const end = n.end;
      const expire = () => {
        const left = until - Date.now();
        if (left > 0) {
          this.timer = setTimeout(expire, Math.min(left, TIMER_MAX));
          this.timer.unref();
        } else if (this.end === end && this.pos < this.end) {
          this.counts.dropped += this.end - this.pos;
          this.pos = this.end;
        }
      };
      this.timer = setTimeout(expire,
        Math.min(Math.max(0, until - Date.now()), TIMER_MAX));
      this.timer.unref();
    }
  }

  // Adapted once per range used, never by a failed load.
  nextSize() {
    let size = this.size;
    const used = Number(this.pos - this.start);
    if (this.sized !== this.gen && this.end > this.start && used > 0) {
      this.sized = this.gen;
      const lasted = (Date.now() - this.since) *
        Number(this.end - this.start) / used;
      if (lasted < this.o.target) size *= 2;
      else if (lasted > 2 * this.o.target) size = Math.floor(size / 2);
    }
    size = Math.min(this.o.maxRange, Math.max(this.o.minRange, size));
    if (this.cap !== null) size = Math.min(size, this.cap);
    this.size = size;
    return size;
  }

  // A range of at most size IDs. A server that refuses the size as above
  // its bound (COUNT_INVALID) is asked again within it: the bound its
  // message names, else half.
  async lease(size) {
    for (let k = 0; k < 64; k++) {
      try {
        return await this.client.lease(this.name, size);
      } catch (e) {
        if (!(e instanceof FrondError) || e.code !== "COUNT_INVALID" ||
            e.status !== 400 || size <= 1)
          throw e;
        const m = /\[1, ?(\d+)\]/.exec(e.message);
        const bound = m ? Number(m[1]) : 0;
        size = bound >= 1 && bound < size ? bound : Math.floor(size / 2);
        this.cap = size;
        this.size = Math.min(this.size, size);
      }
    }
    throw new FrondError("COUNT_INVALID",
      `${this.name}: no range size the server takes`);
  }

  // Fetch the next range unless one is on its way or waiting. The
  // promise resolves to null or the error of the load; it never rejects.
  load() {
    if (this.loading || this.nextRange || this.closed) return;
    this.loading = this.lease(this.nextSize()).then(
      ({ start, end, at }) => {
        this.loading = null;
        if (this.closed) {
          this.counts.dropped += end - start;
          return null;
        }
        const hi = this.hi.get(at);
        if (hi !== undefined && start < hi) {
          this.counts.dropped += end - start;
          return new FrondError("BAD_RESPONSE",
            `range [${start}, ${end}) of ${this.name} from ` +
            `${this.client.servers[at]} is below ${hi}, the end of a range ` +
            "it leased before: dropped");
        }
        this.hi.set(at, end);
        this.counts.ranges++;
        this.nextRange = { start, end, fetched: Date.now() };
        return null;
      },
      (e) => {
        this.loading = null;
        return e instanceof FrondError ? e
          : new FrondError("BAD_RESPONSE", String(e));
      });
  }

  stats() {
    let left = this.end - this.pos;
    if (this.nextRange) left += this.nextRange.end - this.nextRange.start;
    return {
      ranges: this.counts.ranges,
      issued: Number(this.counts.issued + this.pos - this.start),
      dropped: Number(this.counts.dropped), rangeSize: this.size,
      buffered: Number(left),
    };
  }

  // Drop both buffers: their IDs are skipped, never reused.
  close() {
    this.closed = true;
    this.counts.issued += this.pos - this.start;
    this.counts.dropped += this.end - this.pos;
    this.start = this.pos = this.end;
    if (this.nextRange) {
      this.counts.dropped += this.nextRange.end - this.nextRange.start;
      this.nextRange = null;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
