#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_http_mysql.py -- the HTTP tests of Leaf's paths, byte for byte, and of
the segment and tag administration endpoints (test_http.py), run again
with the segment store on a real MariaDB (scripts/mariadb.sh): a Leaf
deployment that switches in place keeps its table and its clients.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import test_http as th  # noqa: E402


def main():
    my = ft.MariaDB()
    try:
        th.STORE = my.uri
        ft.main([th.test_leaf_snowflake, th.test_leaf_segment,
                 th.test_leaf_decode, th.test_v1_snowflake,
                 th.test_v1_segment, th.test_admin,
                 th.test_health_and_metrics])
    finally:
        if th.SRV is not None:
            rc = th.SRV.stop()
            if rc != 0:
                print("server exited %d:\n%s" % (rc, th.SRV.output()))
            th.SRV.close()
        my.close()


if __name__ == "__main__":
    main()
