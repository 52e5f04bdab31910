# SPDX-License-Identifier: Apache-2.0
"""
fakefrond.py -- Frond servers in a test's process, on 127.0.0.1, that
answer GET /v1/segment/{tag}/range as a real server does, or as it must
not, for the clients' tests:

- FakeStore: one store (Leaf's leaf_alloc, in memory): segments of
  `step` IDs handed out in order, and an identity (32 hex digits).
- FakeServer(store): a server on it that answers ranges from its own
  buffered segment, as frond serve does, so that two of them hand out
  ranges that are unique but not in order; with `names_store` it sends
  "store" and Frond-Store. `max_range` refuses larger counts with
  COUNT_INVALID; `fail` answers 503; `bad` replaces the answer's start
  and end with JSON text as given (a bad answer); `hold`, an Event,
  holds each request until it is set (60 s at most), counted in `held`.
"""
import http.server
import json
import secrets
import socket
import threading
import urllib.parse


class FakeStore:
    def __init__(self, step=1000, ident=None):
        self.step = step
        self.next = 1
        self.id = ident or secrets.token_hex(16)
        self.lock = threading.Lock()

    def segment(self):
        with self.lock:
            s = self.next
            self.next += self.step
            return s, s + self.step


class FakeServer:
    def __init__(self, store, names_store=True, max_range=1000000):
        self.store = store
        self.names_store = names_store
        self.max_range = max_range
        self.fail = False
        self.dead = False
        self.bad = None
        self.hold = None
        self.held = 0
        self.pos = self.end = 0
        self.lock = threading.Lock()
        self.ranges = 0
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                fake.answer(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       daemon=True)
        self.thread.start()

    def take(self, n):
        """n IDs from the buffer, loading segments as it runs out (a
        range may span two, as the server's does)."""
        with self.lock:
            if self.end - self.pos >= n:
                s = self.pos
                self.pos += n
                return s, s + n
            # Leftover dropped, a run of whole segments taken: simple, and
            # still unique.
            first = None
            got = 0
            while got < n:
                s, e = self.store.segment()
                if first is None:
                    first = s
                elif s != first + got:
                    first, got = s, 0
                got += e - s
            self.pos, self.end = first + n, first + got
            return first, first + n

    def answer(self, h):
        if self.hold is not None:
            with self.lock:
                self.held += 1
            self.hold.wait(60)
        if self.dead:  # as a killed server: no answer, connection gone
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        u = urllib.parse.urlsplit(h.path)
        q = urllib.parse.parse_qs(u.query)
        extra = {}
        if self.fail:
            code, body = 503, {"error": {"code": "UNAVAILABLE",
                                         "message": "fake: failing"}}
        elif not (u.path.startswith("/v1/segment/") and
                  u.path.endswith("/range")):
            code, body = 404, {"error": {"code": "NOT_FOUND",
                                         "message": "fake: %s" % u.path}}
        else:
            n = int(q.get("count", ["1"])[0])
            if n < 1 or n > self.max_range:
                code, body = 400, {"error": {
                    "code": "COUNT_INVALID", "message":
                    "count must be an integer in [1, %d]" % self.max_range}}
            else:
                s, e = self.take(n)
                self.ranges += 1
                code, body = 200, {"tag": u.path.split("/")[3],
                                   "start": str(s), "end": str(e)}
                if self.names_store:
                    body["store"] = self.store.id
                    extra["Frond-Store"] = self.store.id
        text = json.dumps(body)
        if code == 200 and self.bad is not None:
            text = '{"start": %s, "end": %s}' % self.bad
        b = text.encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(b)))
        for k, v in extra.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(b)

    def kill(self):
        """Gone, as after SIGKILL: connections refused, and those open
        closed at their next request."""
        self.dead = True
        self.httpd.shutdown()
        self.httpd.server_close()

    def close(self):
        if self.dead:
            return
        self.httpd.shutdown()
        self.httpd.server_close()
