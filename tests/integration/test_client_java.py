#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_client_java.py -- the Java client (clients/java): the jar built with
javac and jar alone (clients/java/build.sh), its tests (ClientTest: real
`frond serve` processes of the build under test, threads, two JVMs, a
server restarted and one killed, timeouts, the JSON reader's fuzz corpus),
and the complete program of docs/clients/java.md run against a server.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

CLIENT = os.path.join(ft.FROND_SRC, "clients", "java")
OUT = os.path.join(ft.FROND_BUILD, "java-client")


def env():
    ft.need("javac", "openjdk-17-jdk-headless")
    ft.need("jar", "openjdk-17-jdk-headless")
    e = dict(os.environ)
    e["FROND_BIN"] = ft.FROND_BIN
    e.pop("FROND_SERVERS", None)
    return e


def test_client_tests():
    r = subprocess.run([os.path.join(CLIENT, "build.sh"), "test", OUT],
                       env=env(), capture_output=True, text=True, timeout=600)
    print(r.stdout[-6000:], r.stderr[-3000:])
    ft.check(r.returncode == 0, "the Java client's tests failed")
    ft.check("all passed" in r.stdout, "no closing line from ClientTest")
    for name in ("threads", "twoProcesses", "serverKilled", "serverRestart",
                 "timeouts", "validity", "fuzzJson", "switchOrder",
                 "switchHammer", "switchHammerServer", "cursorWrap", "blocks"):
        ft.check(re.search(r"^ok   %s " % name, r.stdout, re.M),
                 "%s did not pass" % name)


def test_docs_program():
    """The complete program of docs/clients/java.md, compiled against the
    jar and run with FROND_SERVERS naming a server."""
    with open(os.path.join(ft.FROND_SRC, "docs", "clients", "java.md")) as f:
        page = f.read()
    progs = re.findall(r"```java\n(import .*?public class App .*?)```", page,
                       re.S)
    ft.check(len(progs) == 1, "docs/clients/java.md holds %d programs"
             % len(progs))
    jars = [f for f in os.listdir(OUT) if f.endswith(".jar")] \
        if os.path.isdir(OUT) else []
    if not jars:
        r = subprocess.run([os.path.join(CLIENT, "build.sh"), OUT], env=env(),
                           capture_output=True, text=True, timeout=300)
        ft.check(r.returncode == 0, "build.sh: %s" % r.stderr)
        jars = [f for f in os.listdir(OUT) if f.endswith(".jar")]
    jar = os.path.join(OUT, jars[0])
    d = ft.tempdir()
    try:
        with open(os.path.join(d, "App.java"), "w") as f:
            f.write(progs[0])
        r = subprocess.run(["javac", "-cp", jar, "-d", d,
                            os.path.join(d, "App.java")], env=env(),
                           capture_output=True, text=True, timeout=300)
        ft.check(r.returncode == 0, "javac: %s" % r.stderr)
        with ft.start_server("frond", tags={"orders": 1000}) as s:
            e = env()
            e["FROND_SERVERS"] = "http://127.0.0.1:%d" % s.port
            r = subprocess.run(["java", "-cp", "%s:%s" % (jar, d), "App"],
                               env=e, capture_output=True, text=True,
                               timeout=300)
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
    ft.main([test_client_tests, test_docs_program])
