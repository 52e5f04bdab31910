#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
netproxy.py -- a fault-injecting TCP proxy, controlled while it runs.

One process forwards several routes, each from its own loopback port to a
target (a node's link to ZooKeeper, to the lease database, to its segment
store). Each route is in one of these modes, changed at any time:

  pass         forward as is (also: heal)
  blackhole    forward nothing, in either direction, on open connections and
               new ones alike; the bytes wait, as they do in the kernel while
               a partition lasts, and flow again once the route heals, unless
               an end gave up on the connection meanwhile
  delay MS     deliver every chunk MS milliseconds after it arrived
  reset        send a reset (RST) on every open connection now; new ones pass
  refuse       reset new connections at once (open ones are left alone)

usage: netproxy.py --route NAME=HOST:PORT [--route ...]
It prints one line of JSON, {"NAME": listen_port, ..., "control": port},
then serves. The control port takes one command per line and answers "ok"
or "error ...":

  NAME MODE [ARG]     set a route's mode (NAME * for all routes)
  stats               {"NAME": {"mode":..., "open":..., "total":...}, ...}

Everything listens on 127.0.0.1 only. It runs until SIGTERM or stdin closes.
"""
import argparse
import asyncio
import json
import signal
import socket
import struct
import sys

CHUNK = 65536


class Route:
    def __init__(self, name, host, port):
        self.name, self.host, self.port = name, host, port
        self.mode, self.delay = "pass", 0.0
        self.open_gate = asyncio.Event()
        self.open_gate.set()
        self.conns = set()
        self.total = 0

    def set_mode(self, mode, arg=None):
        if mode not in ("pass", "blackhole", "delay", "reset", "refuse"):
            raise ValueError("unknown mode %r" % mode)
        if mode == "reset":
            for c in list(self.conns):
                c.reset()
            mode = "pass"
        self.mode = mode
        self.delay = float(arg) / 1000.0 if mode == "delay" else 0.0
        if mode == "blackhole":
            self.open_gate.clear()
        else:
            self.open_gate.set()

    async def handle(self, reader, writer):
        if self.mode == "refuse":
            Conn.abort(writer)
            return
        self.total += 1
        await self.open_gate.wait()
        try:
            up_r, up_w = await asyncio.open_connection(self.host, self.port)
        except OSError:
            Conn.abort(writer)
            return
        conn = Conn(self, reader, writer, up_r, up_w)
        self.conns.add(conn)
        try:
            await conn.run()
        finally:
            self.conns.discard(conn)


class Conn:
    """One proxied connection: two directions, each a reader task that
    stamps chunks and a writer task that delivers them when due."""

    def __init__(self, route, cr, cw, ur, uw):
        self.route = route
        self.ends = (cw, uw)
        self.pipes = [(cr, uw), (ur, cw)]
        self.tasks = []

    @staticmethod
    def abort(writer):
        sock = writer.get_extra_info("socket")
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
        except OSError:
            pass
        writer.transport.abort()

    def reset(self):
        for w in self.ends:
            Conn.abort(w)
        for t in self.tasks:
            t.cancel()

    async def pump_in(self, reader, queue):
        loop = asyncio.get_running_loop()
        while True:
            await self.route.open_gate.wait()
            data = await reader.read(CHUNK)
            await queue.put((loop.time() + self.route.delay, data))
            if not data:
                return

    async def pump_out(self, writer, queue):
        loop = asyncio.get_running_loop()
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            await self.route.open_gate.wait()
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    async def run(self):
        for reader, writer in self.pipes:
            q = asyncio.Queue()
            self.tasks.append(asyncio.ensure_future(self.pump_in(reader, q)))
            self.tasks.append(asyncio.ensure_future(self.pump_out(writer, q)))
        try:
            await asyncio.gather(*self.tasks)
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for t in self.tasks:
                t.cancel()
            for w in self.ends:
                w.close()


async def control(routes, reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        words = line.decode().split()
        try:
            if words == ["stats"]:
                answer = json.dumps({
                    r.name: {"mode": r.mode, "open": len(r.conns),
                             "total": r.total} for r in routes.values()})
            else:
                name, mode = words[0], words[1]
                chosen = routes.values() if name == "*" else [routes[name]]
                for r in chosen:
                    r.set_mode(mode, words[2] if len(words) > 2 else None)
                answer = "ok"
        except (IndexError, KeyError, ValueError) as e:
            answer = "error %s" % e
        writer.write((answer + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--route", action="append", required=True,
                    help="NAME=HOST:PORT")
    args = ap.parse_args()
    routes, ports = {}, {}
    for spec in args.route:
        name, _, target = spec.partition("=")
        host, _, port = target.rpartition(":")
        r = routes[name] = Route(name, host, int(port))
        srv = await asyncio.start_server(r.handle, "127.0.0.1", 0)
        ports[name] = srv.sockets[0].getsockname()[1]
    ctl = await asyncio.start_server(
        lambda rd, wr: control(routes, rd, wr), "127.0.0.1", 0)
    ports["control"] = ctl.sockets[0].getsockname()[1]
    print(json.dumps(ports), flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    loop.add_reader(sys.stdin.fileno(),
                    lambda: done.set() if not sys.stdin.read(1) else None)
    await done.wait()


if __name__ == "__main__":
    asyncio.run(main())
