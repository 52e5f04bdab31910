#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_etcd_harness.py -- the etcd fixture (etcd_common.Etcd) itself: a
member whose drawn port something else took before etcd bound it does
not fail the test that wanted a cluster; the cluster starts again on
other ports.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etcd_common  # noqa: E402
import frondtest as ft  # noqa: E402


def test_cluster_starts_past_a_taken_port():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    drawn = []
    real = ft.free_port

    def draw():
        # the second port drawn (member 1's client port) is taken
        drawn.append(port if len(drawn) == 1 else real())
        return drawn[-1]

    ft.free_port = draw
    try:
        with etcd_common.Etcd(3) as etcd:
            ft.check(port not in etcd.client + etcd.peer,
                     "the cluster runs on the taken port %d" % port)
            ft.check(len(drawn) == 12,
                     "%d ports drawn, not 6 twice" % len(drawn))
            ft.check(etcd.get("/frond-harness") == "",
                     "a fresh cluster holds a key")
    finally:
        ft.free_port = real
        taken.close()


if __name__ == "__main__":
    ft.main([test_cluster_starts_past_a_taken_port])
