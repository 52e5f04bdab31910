#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Real Redis clients, unmodified, against Frond's RESP port: redis-cli
(one-shot, commands on stdin, interactive on a terminal, -r repeat),
redis-benchmark, and the Python redis client (with and without AUTH).
Each connects and fetches IDs; the IDs of a tag are unique and
increasing. A missing client fails the test: scripts/deps.sh test
installs them.
"""
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

TAGS = {"order": 1000, "pay": 50}


def stop(s):
    """SIGTERM: the server drains and exits 0."""
    rc = s.stop()
    check(rc == 0, "frond serve exited %d: %s" % (rc, s.output()[-2000:]))


def redis_module():
    """The Python redis client. Debian's python3-redis lives in
    /usr/lib/python3/dist-packages, which another python3 on PATH (a
    virtualenv, pyenv) does not search: look there too."""
    try:
        import redis
        return redis
    except ImportError:
        pass
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import redis
        return redis
    except ImportError:
        raise ft.Failure("the Python redis client is not installed (Debian "
                         "package python3-redis; scripts/deps.sh test "
                         "installs it)")


def cli(port, *args, input=None):
    r = subprocess.run(["redis-cli", "-p", str(port)] + [str(a) for a in args],
                       input=input, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "redis-cli %s: %s" % (args, r.stderr))
    return r.stdout


def ints(text):
    return [int(x) for x in text.split()]


def test_redis_cli():
    ft.need("redis-cli", "redis-tools")
    s = ft.Server(resp=True, tags=TAGS)
    try:
        p = s.resp_port
        check(cli(p, "PING").strip() == "PONG", "PING")
        a = ints(cli(p, "INCR", "order"))
        b = ints(cli(p, "incr", "order"))
        check(len(a) == 1 and b[0] > a[0], "one-shot INCR: %r %r" % (a, b))
        err = cli(p, "INCR", "nope")
        check(err.startswith("TAG_NOT_FOUND"), "error reply: %r" % err)
        # -r: the same command repeated on one connection.
        rep = ints(cli(p, "-r", 500, "INCR", "order"))
        check(len(rep) == 500 and rep == sorted(set(rep)) and rep[0] > b[0],
              "-r 500")
        # Commands on stdin, one per line.
        out = cli(p, input="INCR order\nID.NEXT order 3\nPING\nINCR pay\n"
                  "ID.SNOWFLAKE 2\n").split()
        check(len(out) == 8 and out[4] == "PONG", "stdin: %r" % out)
        seq = [int(x) for x in out[:4]]
        check(seq == sorted(set(seq)) and seq[0] > rep[-1], "stdin IDs")
        check(cli(p, "--no-raw", "ID.DECODE", out[7]).count("\n") == 18,
              "ID.DECODE through redis-cli")
        check("redis_version" in cli(p, "INFO", "server"), "INFO")
        stop(s)
    finally:
        s.close()


def test_redis_cli_interactive():
    """redis-cli on a terminal: it sends COMMAND DOCS at start and prints
    replies the human way."""
    ft.need("redis-cli", "redis-tools")
    s = ft.Server(resp=True, tags=TAGS)
    pid, fd = pty.fork()
    if pid == 0:
        # A window size, or linenoise asks the terminal for its cursor.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.execvp("redis-cli", ["redis-cli", "-p", str(s.resp_port)])
    out = b""

    def expect(pattern, timeout=20):
        nonlocal out
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, out)
            if m:
                out = out[m.end():]
                return m
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
        raise ft.Failure("interactive redis-cli: no %r in %r" %
                         (pattern, out[-300:]))

    def say(line, pattern):
        """Type a line once the prompt shows (linenoise is in raw mode by
        then: typed earlier, the terminal would cook the Enter key)."""
        expect(rb"127\.0\.0\.1:\d+> ")
        os.write(fd, line + b"\r")
        return expect(pattern)

    try:
        a = int(say(b"INCR order", rb"\(integer\) (\d+)").group(1))
        b = int(say(b"INCR order", rb"\(integer\) (\d+)").group(1))
        check(b > a, "interactive INCR %d then %d" % (a, b))
        say(b"ID.NEXT order 2", rb'2\) "(\d+)"')
        say(b"INCR nope", rb"\(error\) TAG_NOT_FOUND")
        say(b"PING", rb"PONG")
        expect(rb"127\.0\.0\.1:\d+> ")
        os.write(fd, b"QUIT\r")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                break
            try:
                if select.select([fd], [], [], 0.1)[0]:
                    os.read(fd, 4096)
            except OSError:
                pass
        check(pid == 0, "redis-cli did not exit after QUIT")
        stop(s)
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)
        s.close()


def test_redis_benchmark():
    ft.need("redis-benchmark", "redis-tools")
    # Ten clients drain the tag far above its step: on a loaded host the
    # loader can miss the default 50 ms, which is not what this tests.
    s = ft.Server(resp=True, tags=TAGS, extra=["--segment-wait-ms", "5000"])
    try:
        p = s.resp_port
        before = ints(cli(p, "INCR", "order"))[0]
        for pipe in (1, 16):
            r = subprocess.run(["redis-benchmark", "-p", str(p), "-n", "20000",
                                "-c", "10", "-P", str(pipe), "-q", "INCR",
                                "order"], capture_output=True, text=True,
                               timeout=120)
            check(r.returncode == 0 and "requests per second" in r.stdout,
                  "redis-benchmark -P %d: %s %s" % (pipe, r.stdout, r.stderr))
        after = ints(cli(p, "INCR", "order"))[0]
        check(after >= before + 40001, "40,000 INCRs did not move the tag: "
              "%d then %d" % (before, after))
        m = s.request("GET", "/metrics")[2].decode()
        got = re.search(r'frond_resp_commands_total\{command="incr",'
                        r'result="ok"\} (\d+)', m)
        check(got and int(got.group(1)) == 40002, "INCR count in metrics")
        check('command="incr",result="error"' not in m,
              "INCR errors under load")
        stop(s)
    finally:
        s.close()


def test_python_redis():
    redis = redis_module()
    s = ft.Server(resp=True, tags=TAGS)
    try:
        r = redis.Redis(host="127.0.0.1", port=s.resp_port,
                        client_name="frond-test", socket_timeout=10)
        check(r.ping() is True, "ping")
        ids = [r.incr("order") for _ in range(200)]
        check(ids == sorted(set(ids)), "incr not unique and increasing")
        pipe = r.pipeline(transaction=False)
        for _ in range(1000):
            pipe.incr("pay")
        got = pipe.execute()
        check(got == sorted(set(got)) and len(got) == 1000, "pipeline")
        batch = [int(i) for i in r.execute_command("ID.NEXT", "order", 10)]
        check(len(batch) == 10 and batch[0] > ids[-1], "ID.NEXT")
        sf = [int(i) for i in r.execute_command("ID.SNOWFLAKE", 3)]
        check(len(sf) == 3 and sf == sorted(sf), "ID.SNOWFLAKE")
        check(r.client_getname() == "frond-test", "client name")
        check(r.info("server")["redis_mode"] == "standalone", "info")
        try:
            r.incr("nope")
            raise ft.Failure("unknown tag gave an ID")
        except redis.ResponseError as e:
            check(str(e).startswith("TAG_NOT_FOUND"), str(e))
        check(isinstance(r.incr("order"), int), "usable after an error")
        # Threads share a connection pool; IDs stay unique.
        import threading
        out, lock = [], threading.Lock()

        def work():
            mine = [r.incr("order") for _ in range(300)]
            check(mine == sorted(mine), "per-thread order")
            with lock:
                out.extend(mine)
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        check(len(out) == 1200 and len(set(out)) == 1200, "threads unique")
        r.close()
        stop(s)
    finally:
        s.close()
    # With a token: the client's password is sent as AUTH.
    s = ft.Server(resp=True, tags=TAGS, extra=["--admin-token", "tok"])
    try:
        bad = redis.Redis(host="127.0.0.1", port=s.resp_port, socket_timeout=10)
        try:
            bad.incr("order")
            raise ft.Failure("INCR without AUTH gave an ID")
        except redis.exceptions.AuthenticationError:
            pass
        except redis.ResponseError as e:
            check("NOAUTH" in str(e), str(e))
        r = redis.Redis(host="127.0.0.1", port=s.resp_port, password="tok",
                        socket_timeout=10)
        a, b = r.incr("order"), r.incr("order")
        check(b > a, "after AUTH")
        r2 = redis.Redis(host="127.0.0.1", port=s.resp_port,
                         username="default", password="tok", db=0,
                         socket_timeout=10)
        check(r2.incr("order") > b, "username + password")
        stop(s)
    finally:
        s.close()


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    ft.main([test_redis_cli, test_redis_cli_interactive, test_redis_benchmark,
             test_python_redis])
