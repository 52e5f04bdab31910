# SPDX-License-Identifier: Apache-2.0
"""
respclient.py -- a raw client of the Redis protocol for the tests, as
Redis' own tests/support/redis.tcl is beside its server.tcl: it sends
exactly the bytes a test means and reads one reply at a time, RESP2 and
RESP3. The servers it talks to are started by frondtest.py.
"""
import socket

from frondtest import Failure


class RespError(Exception):
    """An error reply ("-CODE message"), returned as a value by Resp."""

    def __init__(self, line):
        super().__init__(line)
        self.line = line
        self.code = line.split(" ", 1)[0]


class RespSet(list):
    """A RESP3 set (~), kept in the order sent."""


class Verbatim(bytes):
    """A RESP3 verbatim string (=), without its "txt:" prefix."""


class BigNumber(int):
    """A RESP3 big number (()."""


class Resp:
    """A raw RESP connection for tests that send exactly the bytes they
    mean: send() writes bytes; reply() reads one reply (ints, bytes, lists,
    None, str for status lines, RespError for errors, and after HELLO 3
    dicts for maps, RespSet, float, bool, BigNumber, Verbatim); closed()
    tells whether the server closed the connection."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port),
                                             timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def command(self, *args):
        """Send one command as a multibulk array and read its reply."""
        self.send(encode(*args))
        return self.reply()

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _blob(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RespError(rest.decode("utf-8", "replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._blob(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if t == b"%":
            out = {}
            for _ in range(int(rest)):
                k = self.reply()
                out[k] = self.reply()
            return out
        if t == b"~":
            return RespSet(self.reply() for _ in range(int(rest)))
        if t == b"_" and rest == b"":
            return None
        if t == b",":
            return float(rest)
        if t == b"#" and rest in (b"t", b"f"):
            return rest == b"t"
        if t == b"(":
            return BigNumber(int(rest))
        if t == b"=":
            data = self._blob(int(rest))
            if data[3:4] != b":":
                raise Failure("verbatim string without a format: %r" % data)
            return Verbatim(data[4:])
        raise Failure("not a RESP reply: %r" % line)

    def closed(self, timeout=5.0):
        """True when the server closes the connection within timeout (bytes
        that arrive meanwhile are added to self.buf, unparsed)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return True
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def close(self):
        self.sock.close()


def encode(*args):
    """One command as a RESP multibulk array."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)
