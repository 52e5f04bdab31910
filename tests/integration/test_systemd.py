#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_systemd.py -- the systemd unit and the example configuration.

The unit (dist/frond.service.in, configured by CMake for PREFIX=/usr) must
pass `systemd-analyze verify` in a root that holds what it names (the
binary, the man pages), with no warning at all; its sandbox must rate at
most 2.0 in `systemd-analyze security` and the exposure the operations
page records; the command line it runs must start a server from its
working directory and stop cleanly within its stop timeout. The example
frond.conf must list every key of `frond serve --print-config`, commented
out at its default. None of this needs systemd as PID 1: systemd-analyze
reads unit files offline.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

SRC = ft.FROND_SRC
MAX_EXPOSURE = 2.0


def configure(tmp, prefix="/usr"):
    """The unit as CMake configures it for prefix (no build needed)."""
    b = os.path.join(tmp, "build")
    r = subprocess.run(["cmake", "-S", SRC, "-B", b, "-DFROND_TESTS=OFF",
                        "-DCMAKE_INSTALL_PREFIX=" + prefix],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "cmake: %s" % r.stderr[-2000:])
    with open(os.path.join(b, "frond.service")) as f:
        return f.read()


def unit_keys(text):
    """{(section, key): [values]} of a unit file."""
    out, sec = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            sec = m.group(1)
            continue
        k, sep, v = line.partition("=")
        check(sep and sec, "not a unit line: %r" % line)
        out.setdefault((sec, k), []).append(v)
    return out


def make_root(tmp, unit_text):
    """A root with the unit, the binary where ExecStart says, the man pages
    and the host's targets, for `systemd-analyze --root`."""
    root = os.path.join(tmp, "root")
    units = os.path.join(root, "lib", "systemd", "system")
    os.makedirs(units)
    with open(os.path.join(units, "frond.service"), "w") as f:
        f.write(unit_text)
    exe = unit_keys(unit_text)[("Service", "ExecStart")][0].split()[0]
    os.makedirs(os.path.dirname(root + exe), exist_ok=True)
    shutil.copy(ft.FROND_BIN, root + exe)
    for sec, page in (("1", "frond.1"), ("5", "frond.conf.5")):
        d = os.path.join(root, "usr", "share", "man", "man" + sec)
        os.makedirs(d, exist_ok=True)
        shutil.copy(os.path.join(SRC, "man", page), d)
    # multi-user.target, network-online.target, sysinit.target, ...: the
    # unit's dependencies, from the host.
    host = os.path.join(root, "usr", "lib", "systemd", "system")
    os.makedirs(host)
    for name in os.listdir("/lib/systemd/system"):
        if name.endswith(".target"):
            shutil.copy(os.path.join("/lib/systemd/system", name), host)
    return root


def analyze(root, *args):
    env = dict(os.environ, MANPATH=os.path.join(root, "usr", "share", "man"),
               SYSTEMD_LOG_LEVEL="notice")
    return subprocess.run(["systemd-analyze"] + list(args), env=env,
                          capture_output=True, text=True, timeout=120)


def verify(root, unit):
    return analyze(root, "verify", "--root=" + root,
                   "/lib/systemd/system/" + unit)


# ------------------------------------------------------------------ tests

def test_verify():
    ft.need("systemd-analyze", "systemd")
    tmp = ft.tempdir()
    try:
        text = configure(tmp)
        root = make_root(tmp, text)
        r = verify(root, "frond.service")
        check(r.returncode == 0 and r.stdout == "" and r.stderr == "",
              "systemd-analyze verify: rc %d\n%s%s" % (r.returncode,
                                                      r.stdout, r.stderr))
        # The check can fail: a misspelt key, a bad value and a missing
        # binary are each reported (verify exits 0 on the first two, so
        # any output counts).
        units = os.path.join(root, "lib", "systemd", "system")
        for bad, what in ((text.replace("NoNewPrivileges=", "NoNewPrivilege="),
                           "Unknown key"),
                          (text.replace("ProtectSystem=strict",
                                        "ProtectSystem=strickt"),
                           "protect system"),
                          (text.replace("/frond serve", "/frond-missing serve"),
                           "not executable")):
            with open(os.path.join(units, "bad.service"), "w") as f:
                f.write(bad)
            r = verify(root, "bad.service")
            check(what in r.stdout + r.stderr, "verify missed %r: %r"
                  % (what, r.stdout + r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_security():
    ft.need("systemd-analyze", "systemd")
    tmp = ft.tempdir()
    try:
        root = make_root(tmp, configure(tmp))
        r = analyze(root, "security", "--offline=yes", "--root=" + root,
                    "--threshold=%d" % int(MAX_EXPOSURE * 10),
                    "/lib/systemd/system/frond.service")
        m = re.search(r"Overall exposure level for frond\.service: "
                      r"(\d+\.\d) (\w+)", r.stdout)
        check(m, "no exposure level: %r" % (r.stdout[-500:] + r.stderr))
        exposure = float(m.group(1))
        check(r.returncode == 0 and exposure <= MAX_EXPOSURE,
              "exposure %s %s, at most %.1f wanted:\n%s" % (
                  m.group(1), m.group(2),
                  MAX_EXPOSURE, "\n".join(l for l in r.stdout.splitlines()
                                          if l.startswith("\u2717"))))
        ops = open(os.path.join(SRC, "docs", "operations.md")).read()
        doc = re.search(r"exposure (\d+\.\d) \((\w+)\)", ops)
        check(doc and (doc.group(1), doc.group(2)) == (m.group(1),
                                                       m.group(2)),
              "docs/operations.md records exposure %s, systemd-analyze "
              "says %s %s" % (doc and doc.groups(), m.group(1), m.group(2)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_config(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    e.update(env or {})
    r = subprocess.run([ft.FROND_BIN, "serve", "--print-config"] + list(args),
                       capture_output=True, text=True, timeout=60, env=e)
    check(r.returncode == 0, "print-config %s: %s" % (args, r.stderr))
    return dict(l.split(" = ", 1) if " = " in l else (l.rstrip(" ="), "")
                for l in r.stdout.splitlines())


def test_unit_matches_config():
    tmp = ft.tempdir()
    try:
        keys = unit_keys(configure(tmp))
        svc = lambda k: keys.get(("Service", k), [None])[-1]  # noqa: E731
        exec_start = shlex.split(svc("ExecStart"))
        check(exec_start == ["/usr/bin/frond", "serve", "--config",
                             "/etc/frond/frond.conf"],
              "ExecStart for PREFIX=/usr: %r" % exec_start)
        # frond check first, on the same file and environment.
        check(shlex.split(svc("ExecStartPre")) ==
              ["/usr/bin/frond", "check", "--config",
               "/etc/frond/frond.conf"],
              "ExecStartPre for PREFIX=/usr: %r" % svc("ExecStartPre"))
        check(svc("EnvironmentFile") == "-/etc/frond/frond.env",
              "EnvironmentFile: %r" % svc("EnvironmentFile"))
        # The relative defaults (data_dir, the SQLite store) land in the
        # state directory.
        check(svc("StateDirectory") == "frond" and
              svc("WorkingDirectory") == "/var/lib/frond",
              "StateDirectory %r, WorkingDirectory %r"
              % (svc("StateDirectory"), svc("WorkingDirectory")))
        d = print_config()
        check(d["data_dir"] == "." and d["store"] == "sqlite:frond.db",
              "defaults no longer relative: %r" % d)
        m = re.fullmatch(r"(\d+)s", svc("TimeoutStopSec"))
        check(m and int(m.group(1)) * 1000 > int(d["drain_timeout_ms"]) * 2,
              "TimeoutStopSec %s leaves no room for drain_timeout_ms %s"
              % (svc("TimeoutStopSec"), d["drain_timeout_ms"]))
        check(int(svc("LimitNOFILE")) > int(d["max_connections"]) + 100,
              "LimitNOFILE %s below max_connections %s"
              % (svc("LimitNOFILE"), d["max_connections"]))
        # A configuration the server cannot read (exit 2) is not retried.
        check(svc("RestartPreventExitStatus") == "2",
              "RestartPreventExitStatus: %r" % svc("RestartPreventExitStatus"))
        r = ft.run(["serve", "--no-such-key", "1"])
        check(r.returncode == 2, "a bad flag exits %d, not 2" % r.returncode)
        # The server speaks sd_notify: started once it says READY=1, and
        # restarted when its watchdog pings stop (test_notify.py).
        check(svc("Type") == "notify", "Type=%s" % svc("Type"))
        m = re.fullmatch(r"(\d+)s", svc("WatchdogSec") or "")
        check(m and 10 <= int(m.group(1)) <= 120,
              "WatchdogSec=%s" % svc("WatchdogSec"))
        # /usr/local: under the prefix, where systemd also looks.
        keys = unit_keys(configure(os.path.join(tmp, "local"), "/usr/local"))
        check(keys[("Service", "ExecStart")][0].startswith(
            "/usr/local/bin/frond serve --config /usr/local/etc/frond/"),
            "ExecStart for /usr/local: %r" % keys[("Service", "ExecStart")])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# What dist/frond.conf sets: the paths whose defaults are relative to the
# working directory, made absolute in the unit's, so that a command given
# the file elsewhere (frond next from a home directory) finds the
# server's store and data directory, not new ones where it runs.
SHIPPED_SET = {"store": "sqlite:///var/lib/frond/frond.db",
               "data_dir": "/var/lib/frond"}


def test_example_conf():
    path = os.path.join(SRC, "dist", "frond.conf")
    defaults = print_config()
    seen, active_keys = {}, {}
    with open(path) as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        m = re.match(r"^(\w+) = (.*)$", line)
        if m:
            check(m.group(1) in SHIPPED_SET,
                  "dist/frond.conf:%d is not commented out: %r" % (n, line))
            active_keys[m.group(1)] = m.group(2)
            seen[m.group(1)] = defaults[m.group(1)]
            continue
        check(not line.strip() or line.lstrip().startswith("#"),
              "dist/frond.conf:%d is not commented out: %r" % (n, line))
        m = re.match(r"^# (\w+) =(?: (.*))?$", line)
        if m and m.group(1) in defaults:
            check(m.group(1) not in seen, "dist/frond.conf: %s twice"
                  % m.group(1))
            seen[m.group(1)] = m.group(2) or ""
    check(active_keys == SHIPPED_SET, "dist/frond.conf sets %r, not %r"
          % (active_keys, SHIPPED_SET))
    # Those paths stay absolute, and in the unit's working directory.
    check(defaults["store"] == "sqlite:frond.db" and
          defaults["data_dir"] == ".", "the defaults moved: %r" % defaults)
    missing = sorted(set(defaults) - set(seen))
    check(not missing, "dist/frond.conf lacks %s" % missing)
    for k, v in seen.items():
        check(v == defaults[k], "dist/frond.conf: %s = %r, the default is %r"
              % (k, v, defaults[k]))
    want = dict(defaults, **SHIPPED_SET)
    tmp = ft.tempdir()
    try:
        # As shipped it changes those two only; uncommented, nothing more:
        # every other value shown is the default and is accepted.
        check(print_config("--config", path) == want,
              "dist/frond.conf as shipped sets more than %s"
              % sorted(SHIPPED_SET))
        active = os.path.join(tmp, "frond.conf")
        with open(active, "w") as f:
            for k in seen:
                f.write("%s = %s\n" % (k, active_keys.get(k, seen[k])))
        check(print_config("--config", active) == want,
              "dist/frond.conf uncommented sets more than %s"
              % sorted(SHIPPED_SET))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_exec_start_serves():
    """What the unit runs, run as the unit would: from the working
    directory, with the shipped configuration; then stopped as systemd
    stops it, within TimeoutStopSec."""
    tmp = ft.tempdir()
    proc = None
    try:
        keys = unit_keys(configure(tmp))
        argv = shlex.split(keys[("Service", "ExecStart")][0])
        argv[0] = ft.FROND_BIN
        argv[argv.index("--config") + 1] = os.path.join(SRC, "dist",
                                                        "frond.conf")
        state = os.path.join(tmp, "state")
        os.mkdir(state, 0o700)
        port, rport = ft.free_port(), ft.free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("FROND_")}
        # What frond.env would hold; the addresses are free ports, and
        # the state directory stands in for /var/lib/frond.
        env.update(FROND_LISTEN="127.0.0.1:%d" % port,
                   FROND_RESP_LISTEN="127.0.0.1:%d" % rport,
                   FROND_STORE="sqlite://%s/frond.db" % state,
                   FROND_DATA_DIR=state)
        # ExecStartPre first, as systemd runs it: it passes.
        pre = shlex.split(keys[("Service", "ExecStartPre")][0])
        pre[0] = ft.FROND_BIN
        pre[pre.index("--config") + 1] = argv[argv.index("--config") + 1]
        r = subprocess.run(pre, cwd=state, env=env, capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0 and "FAIL" not in r.stdout,
              "ExecStartPre: exit %d\n%s%s" % (r.returncode, r.stdout,
                                               r.stderr))
        log = open(os.path.join(tmp, "log"), "w+")
        proc = subprocess.Popen(argv, cwd=state, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        ft.wait_port(port)
        import http.client
        deadline = time.monotonic() + 30
        while True:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/readyz")
            st = c.getresponse().status
            c.close()
            if st == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        check(st == 200, "/readyz %d" % st)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/v1/snowflake")
        check(c.getresponse().status == 200, "no snowflake ID")
        c.close()
        # The state lands in the working directory: the store, with the
        # node ID's lease, and the node cache file.
        names = os.listdir(state)
        check("frond.db" in names and any(
            n.startswith("frond-node-") and n.endswith(".cache")
            for n in names), "state directory holds %r" % names)
        stop = int(re.fullmatch(r"(\d+)s", keys[("Service",
                                                 "TimeoutStopSec")][0])
                   .group(1))
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=stop)
        check(rc == 0, "exit %d after SIGTERM: %s" % (rc, open(log.name)
                                                       .read()))
        check(time.monotonic() - t0 < stop, "stop took longer than "
              "TimeoutStopSec")
        proc = None
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_verify, test_security, test_unit_matches_config,
             test_example_conf, test_exec_start_serves])
