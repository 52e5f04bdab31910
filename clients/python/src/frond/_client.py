# SPDX-License-Identifier: Apache-2.0
"""
The client: servers, failover and retries over Frond's HTTP /v1 API,
typed errors, snowflake IDs, formats and decoding, and the segment
handles of _segment.py.

Every call goes to the current server. A connection error, a timeout or a
503 moves the client to the next server and retries after a backoff with
full jitter (base 50 ms, doubling, capped at 1 s), up to `retries` times;
a 4xx is the caller's mistake and is never retried. Each thread keeps its
own keep-alive connection to each server (http.client is not
thread-safe), so threads never wait on one another's calls.

Servers on different stores hand out the same IDs, so the client pins
the first store a range answer names ("store", or the Frond-Store
header) and refuses a range from any other with STORE_MISMATCH, failing
over as for a 503. A server that names no store (an older one) is
trusted only when it is the only server listed.
"""
import http.client
import json
import os
import random
import re
import socket
import threading
import time
import urllib.parse
import weakref

from frond._errors import FrondError

__version__ = "0.1.0"

DEFAULT_SERVERS = ["http://127.0.0.1:8080"]
USER_AGENT = "frond-python/" + __version__
TAG_MAX = 128
INT64_MAX = (1 << 63) - 1
_DECIMAL = re.compile(r"[0-9]{1,19}\Z")
_STORE = re.compile(r"[0-9a-f]{32}\Z")


def _servers(servers):
    if servers is None:
        env = os.environ.get("FROND_SERVERS", "")
        servers = [s for s in (x.strip() for x in env.split(",")) if s] \
            or DEFAULT_SERVERS
    if isinstance(servers, str):
        servers = [servers]
    out = []
    for s in servers:
        u = urllib.parse.urlsplit(s)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise FrondError("INVAL", "a server is http://host:port or "
                             "https://host:port, not %r" % (s,))
        out.append((u.scheme, u.hostname, u.port, u.path.rstrip("/")))
    if not out:
        raise FrondError("INVAL", "no server given")
    return out


def check_tag(name):
    if not isinstance(name, str) or not name or \
            len(name.encode("utf-8", "surrogatepass")) > TAG_MAX:
        raise FrondError("TAG_INVALID", "a tag is a string of 1 to %d "
                         "bytes, not %r" % (TAG_MAX, name))


def check_count(n, most=None):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1 or \
            (most is not None and n > most):
        raise FrondError("COUNT_INVALID", "count must be an integer of at "
                         "least 1%s, not %r" % (
                             "" if most is None else " and at most %d" % most,
                             n))


# Every client, for the child of a fork() (below).
_CLIENTS = weakref.WeakSet()


def _after_fork():
    """In a child of fork(): a copied buffer would hand out the parent's
    IDs, a copied connection would mix their answers, a copied lock may
    be held by a thread that is not there. Each client starts afresh:
    new connections and locks, empty buffers (their IDs skipped)."""
    for c in list(_CLIENTS):
        c._lock = threading.Lock()
        c._local = threading.local()
        c._conns = weakref.WeakSet()
        for s in list(c._tags.values()):
            s._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class Client:
    """A client of one or more Frond servers.

    servers: base URLs ("http://127.0.0.1:8080"), tried in order; default
    FROND_SERVERS (comma-separated), else http://127.0.0.1:8080.
    timeout: seconds for each attempt of a call (connect, send, answer).
    retries: further attempts after a connection error, timeout or 503.
    token: sent as "Authorization: Bearer <token>".
    The rest are the defaults of tag(): see frond.Segment.

    Thread-safe. close() drops every buffered range (those IDs are
    skipped, never reused) and the connections."""

    def __init__(self, servers=None, *, timeout=2.0, retries=3, token=None,
                 backoff=0.05, backoff_max=1.0, min_range=1000,
                 max_range=1000000, preload=0.2, target=10.0,
                 validity=60.0):
        self._servers = _servers(servers)
        if timeout <= 0 or retries < 0:
            raise FrondError("INVAL", "timeout > 0 and retries >= 0")
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.backoff_max = float(backoff_max)
        self._headers = {"User-Agent": USER_AGENT,
                         "Accept": "application/json"}
        if token:
            self._headers["Authorization"] = "Bearer " + token
        self._defaults = dict(min_range=min_range, max_range=max_range,
                              preload=preload, target=target,
                              validity=validity)
        self._cur = 0
        self._lock = threading.Lock()
        self._local = threading.local()
        # every thread's connections, for close(); a thread's go with it
        self._conns = weakref.WeakSet()
        self._tags = {}
        self._closed = False
        self._stats = {"calls": 0, "failovers": 0, "retries": 0}
        self._store = None  # (identity, server index) of the first seen
        _CLIENTS.add(self)

    # --------------------------------------------------------- transport

    def _conn(self, i):
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        c = conns.get(i)
        if c is None:
            scheme, host, port, _ = self._servers[i]
            cls = http.client.HTTPSConnection if scheme == "https" \
                else http.client.HTTPConnection
            c = cls(host, port, timeout=self.timeout)
            conns[i] = c
            with self._lock:
                self._conns.add(c)
        return c

    def _drop(self, i):
        c = getattr(self._local, "conns", {}).pop(i, None)
        if c is not None:
            c.close()

    def _fail_over(self, i):
        with self._lock:
            if self._cur == i:
                self._cur = (i + 1) % len(self._servers)
                self._stats["failovers"] += 1

    def get(self, path, query=None, check=None):
        """GET path (under /v1) with query; the decoded JSON body.
        check(body, i, headers), when given, may refuse a 200 answer of
        server i with STORE_MISMATCH: the call then fails over as for a
        503."""
        if self._closed:
            raise FrondError("CLOSED", "the client is closed")
        target = path + ("?" + urllib.parse.urlencode(query) if query
                         else "")
        last = mismatch = None
        for attempt in range(self.retries + 1):
            if attempt > 0:
                with self._lock:
                    self._stats["retries"] += 1
                time.sleep(random.uniform(
                    0, min(self.backoff_max,
                           self.backoff * (1 << (attempt - 1)))))
            i = self._cur
            with self._lock:
                self._stats["calls"] += 1
            try:
                c = self._conn(i)
                reused = c.sock is not None
                try:
                    status, body, hdrs = self._send(c, i, target)
                except (http.client.RemoteDisconnected, ConnectionResetError,
                        BrokenPipeError):
                    if not reused:
                        raise
                    # The server closed a connection idle past its
                    # idle_timeout_ms: once more on a fresh one, not a
                    # failover.
                    self._drop(i)
                    status, body, hdrs = self._send(self._conn(i), i,
                                                    target)
            except (socket.timeout, TimeoutError) as e:
                self._drop(i)
                last = FrondError("TIMEOUT", "%s: no answer within %.3g s "
                                  "(%s)" % (self._name(i), self.timeout, e))
                self._fail_over(i)
                continue
            except (OSError, http.client.HTTPException) as e:
                self._drop(i)
                last = FrondError("UNAVAILABLE", "%s: %s" % (self._name(i),
                                                              e or type(e)))
                self._fail_over(i)
                continue
            if status == 200:
                try:
                    got = json.loads(body)
                except ValueError:
                    raise FrondError("BAD_RESPONSE", "%s: %s answered %r"
                                     % (self._name(i), target, body[:200]),
                                     status)
                if check is None:
                    return got
                try:
                    return check(got, i, hdrs)
                except FrondError as e:
                    if e.code != "STORE_MISMATCH":
                        raise
                    last = mismatch = e
                    self._fail_over(i)
                    continue
            err = self._error(i, status, body)
            if status != 503:
                raise err
            last = err
            self._fail_over(i)
        # A server of another store outweighs one that did not answer.
        raise mismatch or last

    def _send(self, c, i, target):
        c.request("GET", self._servers[i][3] + target, headers=self._headers)
        r = c.getresponse()
        body = r.read()
        if r.getheader("Connection", "").lower() == "close":
            self._drop(i)
        return r.status, body, r

    def _name(self, i):
        scheme, host, port, path = self._servers[i]
        return "%s://%s%s%s" % (scheme, host, ":%d" % port if port else "",
                                path)

    def _error(self, i, status, body):
        try:
            e = json.loads(body)["error"]
            return FrondError(str(e["code"]), str(e.get("message", "")),
                              status)
        except (ValueError, KeyError, TypeError):
            return FrondError("BAD_RESPONSE", "%s answered %d %r" % (
                self._name(i), status, body[:200]), status)

    # --------------------------------------------------------------- IDs

    def next(self):
        """One snowflake ID, an int."""
        return self.next_batch(1)[0]

    def next_batch(self, n):
        """n snowflake IDs, increasing, a list of ints."""
        check_count(n)
        return _ints(self.get("/v1/snowflake", {"count": n}), "ids", n)

    def tag(self, name, **options):
        """The segment handle of tag `name`: the same object for the same
        name. Options (min_range, max_range, preload, target, validity)
        default to the client's; they count on the first call only."""
        from frond._segment import Segment
        check_tag(name)
        with self._lock:
            if self._closed:
                raise FrondError("CLOSED", "the client is closed")
            s = self._tags.get(name)
            if s is None:
                opts = dict(self._defaults, **options)
                s = self._tags[name] = Segment(self, name, **opts)
            return s

    def range(self, name, count):
        """Lease `count` consecutive IDs of tag `name`: (start, end), the
        IDs start <= id < end. What Segment does under the hood."""
        start, end, _ = self._lease_range(name, count)
        return start, end

    def _lease_range(self, name, count):
        """range(), and the index of the server that gave it."""
        check_tag(name)
        check_count(count)

        def check(got, i, r):
            if not isinstance(got, dict):
                raise FrondError("BAD_RESPONSE", "%s: a range answer that "
                                 "is not an object: %r" % (self._name(i),
                                                           got))
            start = _decimal(got.get("start"), "start", i, self)
            end = _decimal(got.get("end"), "end", i, self)
            if end - start != count:
                raise FrondError("BAD_RESPONSE", "%s: asked for %d IDs of "
                                 "%s, got [%d, %d)" % (self._name(i), count,
                                                       name, start, end))
            self._check_store(got.get("store"), r.getheader("Frond-Store"),
                              i)
            return start, end, i
        return self.get("/v1/segment/%s/range"
                        % urllib.parse.quote(name, safe=""), {"count": count},
                        check)

    def _check_store(self, body, header, i):
        """The store server i names in a range answer, against the one
        the client pinned (store_id: the first one seen)."""
        if body is not None and header is not None and body != header:
            raise FrondError("BAD_RESPONSE", "%s names store %r in the "
                             "answer and %r in Frond-Store" % (
                                 self._name(i), body, header))
        st = body if body is not None else header
        if st is None:
            if len(self._servers) > 1:
                raise FrondError(
                    "STORE_MISMATCH", "%s does not name its store (a server "
                    "older than the store identity): with several servers "
                    "listed, ranges are taken only from servers that name "
                    "one, so that servers on different stores are never "
                    "mixed" % self._name(i))
            return
        if not isinstance(st, str) or not _STORE.match(st):
            raise FrondError("BAD_RESPONSE", "%s names its store %r, not 32 "
                             "lowercase hex digits" % (self._name(i), st))
        with self._lock:
            if self._store is None:
                self._store = (st, i)
                return
            pinned, at = self._store
        if st != pinned:
            raise FrondError(
                "STORE_MISMATCH", "%s serves store %s, but %s served store "
                "%s: servers on different stores hand out the same IDs; its "
                "range is not used" % (self._name(i), st, self._name(at),
                                       pinned))

    def format(self, name, count=1):
        """count strings of the server's format `name` (format.<name>)."""
        check_count(count)
        got = self.get("/v1/format/" + urllib.parse.quote(name, safe=""),
                       {"count": count})
        ids = got.get("ids") if isinstance(got, dict) else None
        if not isinstance(ids, list) or len(ids) != count:
            raise FrondError("BAD_RESPONSE", "asked for %d strings, got %r"
                             % (count, got))
        return [str(s) for s in ids]

    def decode(self, s, format=None):
        """The fields of an ID or ID string, a dict, as the server
        decodes it (GET /v1/decode)."""
        got = self.get("/v1/decode/" + urllib.parse.quote(str(s), safe=""),
                       {"format": format} if format else None)
        if not isinstance(got, dict):
            raise FrondError("BAD_RESPONSE", "decode answered %r" % (got,))
        return got

    # ------------------------------------------------------------ the rest

    def stats(self):
        """Calls made to the servers (attempts, retries included),
        failovers and retries, and per tag: ranges leased, IDs handed
        out, IDs dropped (expired, closed, or refused: a range below one
        the same server leased before)."""
        with self._lock:
            out = dict(self._stats)
            tags = list(self._tags.items())
        out["tags"] = {n: s.stats() for n, s in tags}
        return out

    def close(self):
        """Drop every buffered range (its IDs are skipped, never reused)
        and close the connections. Further calls raise CLOSED."""
        with self._lock:
            self._closed = True
            tags, self._tags = list(self._tags.values()), {}
            conns, self._conns = list(self._conns), weakref.WeakSet()
        for s in tags:
            s.close()
        for c in conns:
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _decimal(v, what, i, client):
    """A range bound: a JSON string of 1 to 19 decimal digits within
    int64, nothing else (a number may have been rounded on its way, and
    int() would take "1_000" or 1993.7)."""
    if not isinstance(v, str) or not _DECIMAL.match(v) or int(v) > INT64_MAX:
        raise FrondError("BAD_RESPONSE", "%s: a range's %s must be a string "
                         "of decimal digits within int64, not %r"
                         % (client._name(i), what, v))
    return int(v)


def _ints(got, key, n):
    try:
        ids = [int(i) for i in got[key]]
    except (KeyError, TypeError, ValueError):
        raise FrondError("BAD_RESPONSE", "no %s in %r" % (key, got))
    if len(ids) != n:
        raise FrondError("BAD_RESPONSE", "asked for %d IDs, got %d"
                         % (n, len(ids)))
    return ids
