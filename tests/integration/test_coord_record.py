#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_record.py -- the fleet's coordinator recorded in the store
(docs/coordinators.md, "One coordinator per store"), with real servers:
a server whose store is down at start issues no snowflake ID until its
coordinator has been checked against the store's record, then does; a
second server given another coordinator on that store is refused.
"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402


def wait_for(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    check(cond(), "timed out waiting for " + what)


def snowflake(s):
    st, _, b = s.request("GET", "/v1/snowflake")
    return st, b.decode()


def test_store_down_at_start():
    pg, uri = ft.postgres_later()
    tmp = tempfile.mkdtemp(prefix="frond-coordrec-")
    servers = []
    try:
        a = ft.Server(store=uri, extra=[
            "--coordinator", "lease+sqlite://%s/a.db" % tmp])
        servers.append(a)
        st, body = snowflake(a)
        check(st == 503 and json.loads(body)["error"]["code"] == "STORE"
              and "not checked" in body,
              "snowflake before the check: %d %s" % (st, body))
        st, _, b = a.request("GET", "/readyz?kind=snowflake")
        check(st == 503 and b"checked against the store" in b,
              "readyz before the check: %d %r" % (st, b))
        pg.start()
        wait_for("snowflake IDs after the check",
                 lambda: snowflake(a)[0] == 200, 60)
        st, _, b = a.request("GET", "/readyz?kind=snowflake")
        check(st == 200, "readyz after the check: %d %r" % (st, b))
        # Another coordinator on the same store: refused before its first
        # ID (frond next claims as a server does; it makes no lease file).
        open(os.path.join(tmp, "b.db"), "w").close()
        r = ft.run(["next", "--store", uri, "--coordinator",
                    "lease+sqlite://%s/b.db" % tmp], cwd=tmp)
        check(r.returncode == 1 and "COORDINATOR_MISMATCH" in r.stderr and
              "a.db" in r.stderr and "b.db" in r.stderr and not r.stdout,
              "frond next on another coordinator: %d %s%s" %
              (r.returncode, r.stdout, r.stderr))
        ids = [int(x) for x in json.loads(
            a.request("GET", "/v1/snowflake?count=100")[2])["ids"]]
        check(len(set(ids)) == 100, "IDs after the refusal: %r" % ids[:5])
    finally:
        for s in servers:
            s.stop()
        pg.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_store_down_at_start])
