#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_status_page.py -- the status page (/) rendered by headless Chromium:
the DOM names the node, the layout and each tag with both buffers, and a
screenshot is saved in the build directory for a human to look at.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft
from frondtest import check


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    ft.need("chromium", "chromium")


def run_chromium(args, url):
    profile = tempfile.mkdtemp(prefix="frond-chromium-")
    try:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--user-data-dir=" + profile,
               "--window-size=1200,900"] + args + [url]
        return subprocess.run(cmd, capture_output=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def test_status_page():
    s = ft.Server(tags={"orders": 1000, "payments": 50,
                        "<b>escaped</b>": 10})
    try:
        for _ in range(30):
            s.request("GET", "/api/segment/get/orders")
        for _ in range(70):
            s.request("GET", "/api/segment/get/payments")
        s.request("GET", "/v1/snowflake?count=1000")
        url = "http://127.0.0.1:%d/" % s.port
        st, h, body = s.request("GET", "/")
        check(st == 200 and h["content-type"].startswith("text/html"), h)
        check(b"http://" not in body and b"https://" not in body,
              "the page must not load external assets")
        r = run_chromium(["--dump-dom"], url)
        dom = r.stdout.decode("utf-8", "replace")
        check(r.returncode == 0, r.stderr[-2000:])
        for want in ("Frond node 0", "orders", "payments", "current buffer",
                     "next buffer", "step", "uptime", "&lt;b&gt;escaped",
                     "time=41,node=10,seq=12"):
            check(want in dom, "DOM lacks %r" % want)
        check("<b>escaped</b>" not in dom, "tag name not escaped")
        shot = os.path.join(ft.FROND_BUILD, "status_page.png")
        if os.path.exists(shot):
            os.unlink(shot)
        r = run_chromium(["--screenshot=" + shot], url)
        check(os.path.exists(shot) and os.path.getsize(shot) > 10000,
              "no screenshot: %s" % r.stderr[-2000:])
        print("screenshot: %s" % shot)
    finally:
        s.close()


if __name__ == "__main__":
    ft.main([test_status_page])
