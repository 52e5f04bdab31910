#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_deb.py -- the Debian package that scripts/deb.sh builds.

It is built (twice, to show the packaging is reproducible), inspected
(name, control fields, conffiles, the files it must hold), checked by
lintian (no error, no warning that is not overridden with a reason), then
unpacked into a temporary root with dpkg -x, where its command prints its
version, its server starts with the shipped configuration on a free port,
issues snowflake and segment IDs and stops cleanly, its library links a
program, and its systemd unit passes systemd-analyze verify. Nothing is
installed on the machine.
"""
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

SRC = ft.FROND_SRC
ENV = dict(os.environ, DEBFULLNAME="Frond packaging test",
           DEBEMAIL="packaging-test@frond.example.org", JOBS="2")
STATE = {}


def sh(args, **kw):
    kw.setdefault("timeout", 900)
    return subprocess.run(args, capture_output=True, text=True, **kw)


def version():
    with open(os.path.join(SRC, "CMakeLists.txt")) as f:
        return re.search(r"project\(frond VERSION ([0-9.]+)", f.read()).group(1)


def test_build():
    ft.need("dpkg-deb", "dpkg")
    ft.need("dpkg-shlibdeps", "dpkg-dev")
    tmp = STATE["tmp"] = ft.tempdir("frond-deb-")
    arch = sh(["dpkg", "--print-architecture"]).stdout.strip()
    debs = []
    for i in (1, 2):
        out = os.path.join(tmp, "out%d" % i)
        os.mkdir(out)
        env = dict(ENV, FROND_DEB_BUILD=os.path.join(tmp, "build"))
        r = sh([os.path.join(SRC, "scripts", "deb.sh"), out], env=env)
        check(r.returncode == 0, "deb.sh: %s" % r.stderr[-3000:])
        want = os.path.join(out, "frond_%s_%s.deb" % (version(), arch))
        check(r.stdout.strip() == want and os.path.exists(want),
              "deb.sh made %r, not %s" % (r.stdout, want))
        debs.append(want)
    with open(debs[0], "rb") as a, open(debs[1], "rb") as b:
        check(a.read() == b.read(), "two builds of one tree differ")
    STATE["deb"] = debs[0]


def field(info, name):
    m = re.search(r"^ %s: (.*)$" % name, info, re.M)
    return m.group(1) if m else None


def test_control():
    deb = STATE["deb"]
    info = sh(["dpkg-deb", "--info", deb]).stdout
    check(field(info, "Package") == "frond", info)
    check(field(info, "Version") == version(), info)
    check(field(info, "Maintainer") ==
          "Frond packaging test <packaging-test@frond.example.org>", info)
    deps = field(info, "Depends") or ""
    for lib in ("libc6", "libuv1", "libsqlite3-0", "libpq5",
                "libzookeeper-mt2", "libsystemd0", "libssl3",
                "libcurl4"):
        check(re.search(r"(^|, )%s( \(|,|$)" % lib, deps),
              "Depends lacks %s: %r" % (lib, deps))
    d = os.path.join(STATE["tmp"], "control")
    r = sh(["dpkg-deb", "--control", deb, d])
    check(r.returncode == 0, r.stderr)
    with open(os.path.join(d, "conffiles")) as f:
        check(f.read() == "/etc/frond/frond.conf\n", "conffiles")
    for script in ("postinst", "prerm", "postrm"):
        p = os.path.join(d, script)
        check(os.access(p, os.X_OK), "%s is not executable" % script)
        r = sh(["sh", "-n", p])
        check(r.returncode == 0, "%s: %s" % (script, r.stderr))
    files = sh(["dpkg-deb", "--contents", deb]).stdout
    names = set(re.findall(r" \./(\S+?)(?: -> \S+)?$", files, re.M))
    ml = sh(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
    for want in ("usr/bin/frond", "usr/include/frond.h",
                 "usr/include/frond/coord.h", "usr/include/frond/format.h",
                 "usr/include/frond/inline.h", "usr/include/frond/log.h",
                 "usr/include/frond/store.h",
                 "usr/lib/%s/libfrond.so.%s" % (ml, version()),
                 "usr/lib/%s/libfrond.so.0" % ml,
                 "usr/lib/%s/libfrond.so" % ml, "usr/lib/%s/libfrond.a" % ml,
                 "usr/lib/%s/pkgconfig/frond.pc" % ml,
                 "lib/systemd/system/frond.service", "etc/frond/frond.conf",
                 "usr/share/man/man1/frond.1.gz",
                 "usr/share/man/man5/frond.conf.5.gz",
                 "usr/share/doc/frond/copyright",
                 "usr/share/doc/frond/changelog.gz",
                 "usr/share/frond/contrib/prometheus/frond.rules.yml",
                 "usr/share/frond/contrib/grafana/frond.json"):
        check(want in names, "the package lacks %s" % want)
    check(not [n for n in names if n.startswith("usr/bin/") and
               n not in ("usr/bin/", "usr/bin/frond")], "stray programs: %r" % names)
    check(" root/root " in files and not re.search(r" (?!root/root)\w+/\w+ ",
                                                    files),
          "files not owned by root")


def test_lintian():
    ft.need("lintian", "lintian")
    r = sh(["lintian", "--fail-on", "error,warning", STATE["deb"]])
    tags = [l for l in r.stdout.splitlines() if re.match(r"^[EW]: ", l)]
    check(r.returncode == 0 and not tags,
          "lintian (rc %d):\n%s\n%s" % (r.returncode, r.stdout, r.stderr))
    # The overrides are the two that come from shipping one package, and
    # nothing else.
    r = sh(["lintian", "--show-overrides", STATE["deb"]])
    overridden = sorted(re.findall(r"^O: frond: (\S+)", r.stdout, re.M))
    check(overridden == ["link-to-shared-library-in-wrong-package",
                         "package-name-doesnt-match-sonames"],
          "overridden: %r" % overridden)


def unpack():
    if "root" not in STATE:
        root = STATE["root"] = os.path.join(STATE["tmp"], "root")
        r = sh(["dpkg", "-x", STATE["deb"], root])
        check(r.returncode == 0, r.stderr)
    return STATE["root"]


def test_version():
    root = unpack()
    r = sh([os.path.join(root, "usr", "bin", "frond"), "--version"])
    lines = r.stdout.split("\n")
    check(r.returncode == 0 and lines[0] == "frond " + version(),
          "--version: %r %r" % (r.stdout, r.stderr))
    check(lines[1].startswith("build: Release, ") and
          lines[1].endswith("asserts off, sanitizers: none"),
          "the package holds another build: %r" % lines[1])
    check(lines[3].startswith("license: Apache-2.0"), "--version: %r" % lines)
    # The licence, machine-readable, as Debian's copyright format has it.
    with open(os.path.join(root, "usr", "share", "doc", "frond",
                           "copyright")) as f:
        text = f.read()
    check(re.search(r"^Files: \*\nCopyright: .*\nLicense: Apache-2\.0$",
                    text, re.M) and
          "/usr/share/common-licenses/Apache-2.0" in text,
          "copyright: %r" % text)
    # A release holds none of the test builds' hooks.
    with open(os.path.join(root, "usr", "bin", "frond"), "rb") as f:
        check(b"FROND_TEST_" not in f.read(), "the packaged frond reads a "
              "FROND_TEST_* variable: a test build's hook")


def test_server():
    root = unpack()
    frond = os.path.join(root, "usr", "bin", "frond")
    state = os.path.join(STATE["tmp"], "var-lib-frond")
    os.mkdir(state, 0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    # The packaged frond.conf names /var/lib/frond by absolute paths: the
    # state directory stands in for it, as frond.env would say.
    env.update(FROND_STORE="sqlite://%s/frond.db" % state,
               FROND_DATA_DIR=state)
    r = sh([frond, "tag", "create", "orders", "--step", "100"], cwd=state,
           env=env)
    check(r.returncode == 0, "tag create: %s" % r.stderr)
    port, rport = ft.free_port(), ft.free_port()
    env.update(FROND_LISTEN="127.0.0.1:%d" % port,
               FROND_RESP_LISTEN="127.0.0.1:%d" % rport)
    log = open(os.path.join(STATE["tmp"], "server.log"), "w+")
    proc = subprocess.Popen([frond, "serve", "--config",
                             os.path.join(root, "etc", "frond",
                                          "frond.conf")],
                            cwd=state, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        ft.wait_port(port)

        def get(path):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", path)
            resp = c.getresponse()
            body = resp.read()
            c.close()
            return resp.status, body

        deadline = time.monotonic() + 30
        while get("/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        check(get("/readyz")[0] == 200, "never ready")
        st, body = get("/api/snowflake/get/x")
        check(st == 200 and int(body) > 0, "snowflake: %d %r" % (st, body))
        st, body = get("/api/segment/get/orders")
        check(st == 200 and int(body) >= 1, "segment: %d %r" % (st, body))
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
        check(rc == 0, "exit %d: %s" % (rc, open(log.name).read()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def test_library():
    root = unpack()
    ml = sh(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
    libdir = os.path.join(root, "usr", "lib", ml)
    prog = os.path.join(STATE["tmp"], "use.c")
    with open(prog, "w") as f:
        f.write('#include <frond.h>\n#include <stdio.h>\n'
                'int main(void) {\n  frond_layout l;\n  frond_gen *g;\n'
                '  int64_t id;\n'
                '  if (frond_layout_parse("frond", &l, NULL) != 0 ||\n'
                '      frond_gen_create(&g, &l, 3, NULL, NULL) != 0 ||\n'
                '      frond_gen_next(g, &id, NULL) != 0)\n    return 1;\n'
                '  frond_gen_close(g, NULL);\n'
                '  printf("%s\\n", id > 0 ? "ok" : "bad");\n  return 0;\n}\n')
    env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=root,
               PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
    pc = sh(["pkg-config", "--cflags", "--libs", "frond"], env=env)
    check(pc.returncode == 0, "pkg-config: %s" % pc.stderr)
    exe = os.path.join(STATE["tmp"], "use")
    r = sh(["cc", "-o", exe, prog] + pc.stdout.split())
    check(r.returncode == 0, "cc: %s" % r.stderr)
    r = sh([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir),
           cwd=STATE["tmp"])
    check(r.returncode == 0 and r.stdout == "ok\n", "the program: %r %r"
          % (r.stdout, r.stderr))
    ldd = sh(["ldd", exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    check(os.path.join(libdir, "libfrond.so.0") in ldd.stdout,
          "not linked against the packaged library: %s" % ldd.stdout)
    # libsystemd is the server's (sd_notify), not the library's.
    needed = sh(["readelf", "-d", os.path.join(libdir, "libfrond.so.0")])
    check("libsqlite3" in needed.stdout and "libsystemd" not in needed.stdout,
          "libfrond.so.0 needs: %s" % needed.stdout)
    needed = sh(["readelf", "-d", os.path.join(root, "usr", "bin", "frond")])
    check("libsystemd.so.0" in needed.stdout, "frond does not link "
          "libsystemd: %s" % needed.stdout)


def test_unit():
    ft.need("systemd-analyze", "systemd")
    root = unpack()
    host = os.path.join(root, "usr", "lib", "systemd", "system")
    os.makedirs(host, exist_ok=True)
    for name in os.listdir("/lib/systemd/system"):
        if name.endswith(".target"):
            shutil.copy(os.path.join("/lib/systemd/system", name), host)
    r = sh(["systemd-analyze", "verify", "--root=" + root,
            "/lib/systemd/system/frond.service"],
           env=dict(os.environ, MANPATH=os.path.join(root, "usr", "share",
                                                     "man"),
                    SYSTEMD_LOG_LEVEL="notice"))
    check(r.returncode == 0 and r.stdout + r.stderr == "",
          "systemd-analyze verify: %s%s" % (r.stdout, r.stderr))


def cleanup():
    if "tmp" in STATE:
        shutil.rmtree(STATE["tmp"], ignore_errors=True)


if __name__ == "__main__":
    try:
        ft.main([test_build, test_control, test_lintian, test_version,
                 test_server, test_library, test_unit])
    finally:
        cleanup()
