#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_client_go.py -- the Go client (clients/go): its own tests (`go test`,
with the race detector), which start real `frond serve` processes of the
build under test, and the complete program of docs/clients/go.md run
against a server. Offline: the client needs nothing but Go's standard
library, and GOPROXY=off keeps it so.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

CLIENT = os.path.join(ft.FROND_SRC, "clients", "go")


def go_env():
    ft.need("go", "golang-go")
    e = dict(os.environ)
    cache = os.path.join(ft.FROND_BUILD, "go")
    e.update(GOPROXY="off", GOFLAGS="-mod=mod", GOTOOLCHAIN="local",
             GOCACHE=os.path.join(cache, "cache"),
             GOPATH=os.path.join(cache, "path"), FROND_BIN=ft.FROND_BIN)
    e.pop("FROND_SERVERS", None)
    return e


def test_go_test():
    r = subprocess.run(["go", "test", "-race", "-count=1", "-timeout", "400s",
                        "-v", "."], cwd=CLIENT, env=go_env(),
                       capture_output=True, text=True, timeout=600)
    print(r.stdout[-6000:], r.stderr[-3000:])
    ft.check(r.returncode == 0, "go test failed")
    ft.check(re.search(r"^ok\s", r.stdout, re.M), "no ok line from go test")
    for name in ("TestTagGoroutines", "TestTwoProcesses", "TestServerKilled",
                 "TestServerRestart", "TestTimeouts", "TestValidity",
                 "TestSwitchHammer", "TestSwitchHammerServer", "TestSwitchOrder",
                 "TestCursorWrap", "TestLocalBlocks"):
        ft.check("--- PASS: %s" % name in r.stdout, "%s did not pass" % name)


def test_go_vet():
    """go vet's full set (go test runs a few of its checks only; copylocks,
    which flags a copied Local, is not among them), and gofmt."""
    r = subprocess.run(["go", "vet", "."], cwd=CLIENT, env=go_env(),
                       capture_output=True, text=True, timeout=300)
    ft.check(r.returncode == 0, "go vet: %s%s" % (r.stdout, r.stderr))
    r = subprocess.run(["gofmt", "-l", "."], cwd=CLIENT, env=go_env(),
                       capture_output=True, text=True, timeout=60)
    ft.check(r.returncode == 0 and not r.stdout.strip(),
             "gofmt: files not formatted: %s%s" % (r.stdout, r.stderr))


def test_docs_program():
    """The complete program of docs/clients/go.md, in a module of its own
    that takes the client from the repository with a replace directive,
    as the page says."""
    with open(os.path.join(ft.FROND_SRC, "docs", "clients", "go.md")) as f:
        page = f.read()
    progs = re.findall(r"```go\n(package main\n.*?)```", page, re.S)
    ft.check(len(progs) == 1, "docs/clients/go.md holds %d programs" % len(progs))
    d = ft.tempdir()
    try:
        with open(os.path.join(d, "main.go"), "w") as f:
            f.write(progs[0])
        with open(os.path.join(d, "go.mod"), "w") as f:
            f.write("module example.com/app\n\ngo 1.19\n\n"
                    "require frond.dev/frond/clients/go v0.0.0\n\n"
                    "replace frond.dev/frond/clients/go => %s\n" % CLIENT)
        with ft.start_server("frond", tags={"orders": 1000}) as s:
            env = go_env()
            env["FROND_SERVERS"] = "http://127.0.0.1:%d" % s.port
            r = subprocess.run(["go", "run", "."], cwd=d, env=env,
                               capture_output=True, text=True, timeout=300)
            print(r.stdout, r.stderr)
            ft.check(r.returncode == 0, "the docs' program failed")
            lines = r.stdout.split("\n")
            ft.check(re.match(r"^snowflake \d{15,19}$", lines[0]),
                     "first line: %r" % lines[0])
            ft.check(lines[1] == "orders 1 2 3", "second line: %r" % lines[1])
            ft.check(lines[2].startswith("frond: TAG_NOT_FOUND"),
                     "third line: %r" % lines[2])
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_go_test, test_go_vet, test_docs_program])
