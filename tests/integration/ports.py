# SPDX-License-Identifier: Apache-2.0
"""
ports.py -- free loopback ports for the tests' servers (frondtest.py
gives them as ft.free_port): drawn below the kernel's ephemeral range and
reserved for the program that drew them, so that no other test program
running beside it is given the same port before its server binds it.
"""
import random
import socket


def _ephemeral_ports():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


# Ports this program has handed out, each held by an abstract-namespace
# Unix socket named after it: the kernel frees the name when the program
# exits, however it exits, and no file is left behind.
_reserved = {}


def _reserve(port):
    """Claim port for this program against every other test program on
    the machine; False when one already holds it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind("\0frond-test-port-%d" % port)
    except OSError:
        s.close()
        return False
    _reserved[port] = s
    return True


def free_port():
    """A free loopback port that stays free until a test binds it: drawn
    below the kernel's ephemeral range, so that no outgoing connection (a
    node's to its database, a load client's) is given it in between, as
    one from port 0 can be; and reserved for this program, so that no
    other test program running beside it draws it in between (the port
    is checked free after the reservation, not before)."""
    lo, _ = _ephemeral_ports()
    top = min(lo, 32768) - 1
    rnd = random.SystemRandom()
    for _ in range(200):
        port = rnd.randint(max(1024, top - 12000), top)
        if port in _reserved or not _reserve(port):
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            _reserved.pop(port).close()
        finally:
            s.close()
    raise RuntimeError("no free port below the ephemeral range")
