#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_kubernetes.py -- the Kubernetes example (dist/kubernetes/) holds
together: its YAML parses (python3-yaml), its objects refer to each other
correctly, and the pod runs what the server really offers.

- Every object has a known apiVersion and kind; the StatefulSet's
  serviceName is a headless Service of the file; Services, the
  StatefulSet and the PodDisruptionBudget select the pod's labels; every
  Service targets a named container port.
- The container runs `frond serve --config` on the file the ConfigMap
  mounts; that file, with the container's environment (the downward API
  and the Secret filled in), is accepted by `frond serve --print-config`,
  and the effective configuration is what the pod needs: addresses beyond
  loopback on the container's ports, an admin token from the Secret, a
  coordinator that hands out node IDs, data_dir on the persistent volume,
  JSON logs for the cluster's log pipeline.
- Every FROND_* variable is one `frond serve --help` lists; the advertised
  address is the pod IP on the HTTP port.
- Probes point at real endpoints of docs/reference/http.md (liveness at
  /livez, which never depends on the store; readiness at /readyz), on the
  HTTP port; preStop and the drain fit in the grace period.
- The Dockerfile installs the package scripts/deb.sh makes and runs as the
  pod's user.
- An init container runs `frond check` with the server's file,
  environment, volumes and sandbox; its configuration check passes.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

SRC = ft.FROND_SRC
DIR = os.path.join(SRC, "dist", "kubernetes")
KNOWN = {("v1", "Secret"), ("v1", "ConfigMap"), ("v1", "Service"),
         ("apps/v1", "StatefulSet"), ("policy/v1", "PodDisruptionBudget")}
# Variables another change adds to `frond serve` (the advertise setting);
# accepted until the binary lists them, then checked like any other.
PENDING_ENV = set()
POD_IP = "10.1.2.3"


def objects():
    import yaml
    with open(os.path.join(DIR, "frond.yaml"), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    check(len(docs) >= 5, "only %d objects in frond.yaml" % len(docs))
    return docs


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and
             (name is None or d["metadata"]["name"] == name)]
    check(len(found) == 1, "%d %s objects named %s" % (len(found), kind, name))
    return found[0]


def container(docs):
    sts = one(docs, "StatefulSet")
    cs = sts["spec"]["template"]["spec"]["containers"]
    check(len(cs) == 1, "%d containers" % len(cs))
    return sts, cs[0]


def serve_keys():
    """{FROND_ variable: key} from `frond serve --list-keys`."""
    r = ft.run(["serve", "--list-keys"])
    check(r.returncode == 0, r.stderr)
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split("\t")
        out[f[1]] = f[0]
    check(len(out) >= 20, "no key table in frond serve --list-keys")
    return out


def pod_env(docs, c):
    """The container's environment as the kubelet builds it: the downward
    API and the Secret filled in, $(VAR) expanded from earlier entries."""
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)),
                e["value"])
            continue
        vf = e["valueFrom"]
        if "fieldRef" in vf:
            check(vf["fieldRef"]["fieldPath"] == "status.podIP",
                  "unexpected fieldRef %r" % vf)
            env[e["name"]] = POD_IP
        elif "secretKeyRef" in vf:
            ref = vf["secretKeyRef"]
            sec = one(docs, "Secret", ref["name"])
            data = sec.get("stringData", {})
            check(ref["key"] in data, "Secret %s has no key %s"
                  % (ref["name"], ref["key"]))
            env[e["name"]] = data[ref["key"]]
        else:
            raise ft.Failure("unexpected valueFrom %r" % vf)
    return env


def effective_config(docs, c, tmp):
    """`frond serve --print-config` with the pod's file and environment."""
    args = c.get("command", []) + c.get("args", [])
    check(args[:2] == ["frond", "serve"] and "--config" in args,
          "the container runs %r, not frond serve --config" % args)
    path = args[args.index("--config") + 1]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    mount = mounts.get(os.path.dirname(path))
    check(mount is not None, "nothing is mounted at %s" % os.path.dirname(
        path))
    vols = {v["name"]: v for v in
            one(docs, "StatefulSet")["spec"]["template"]["spec"]["volumes"]}
    vol = vols[mount["name"]]
    check("configMap" in vol, "%s is not a ConfigMap volume" % mount["name"])
    cm = one(docs, "ConfigMap", vol["configMap"]["name"])
    items = {i["path"]: i["key"] for i in vol["configMap"].get("items", [])}
    key = items.get(os.path.basename(path), os.path.basename(path))
    check(key in cm["data"], "ConfigMap %s has no %s" % (cm["metadata"]
                                                         ["name"], key))
    conf = os.path.join(tmp, "frond.conf")
    with open(conf, "w") as f:
        f.write(cm["data"][key])
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    env.update(pod_env(docs, c))
    r = subprocess.run([ft.FROND_BIN, "serve", "--print-config", "--config",
                        conf], capture_output=True, text=True, timeout=60,
                       env=env)
    check(r.returncode == 0, "frond serve refuses the pod's configuration: "
          "%s" % r.stderr)
    return dict(line.split(" = ", 1) for line in r.stdout.splitlines()
                if " = " in line)


def port_of(addr):
    m = re.fullmatch(r"(.*):(\d+)", addr)
    check(m, "not host:port: %r" % addr)
    return m.group(1), int(m.group(2))


def reference_paths():
    with open(os.path.join(SRC, "docs", "reference", "http.md"),
              encoding="utf-8") as f:
        text = f.read()
    return {p for line in text.split("\n") if line.startswith("### ")
            for _, p in re.findall(r"`([A-Z]+) (/[^`]*)`", line)}


# ------------------------------------------------------------------ tests

def test_objects():
    docs = objects()
    for d in docs:
        check((d.get("apiVersion"), d.get("kind")) in KNOWN,
              "unknown object %s/%s" % (d.get("apiVersion"), d.get("kind")))
        check(d.get("metadata", {}).get("name"), "an object without a name")
    sts, c = container(docs)
    labels = sts["spec"]["template"]["metadata"]["labels"]
    check(sts["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "the StatefulSet does not select its own pods")
    hs = one(docs, "Service", sts["spec"]["serviceName"])
    check(hs["spec"].get("clusterIP") == "None",
          "serviceName %s is not headless" % hs["metadata"]["name"])
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for svc in [d for d in docs if d["kind"] == "Service"]:
        check(svc["spec"]["selector"].items() <= labels.items(),
              "Service %s selects no pod" % svc["metadata"]["name"])
        for p in svc["spec"]["ports"]:
            check(p["targetPort"] in ports or p["targetPort"] in
                  ports.values(), "Service %s targets port %r the container "
                  "does not have" % (svc["metadata"]["name"], p["targetPort"]))
    pdb = one(docs, "PodDisruptionBudget")
    check(pdb["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "the PodDisruptionBudget selects no pod")


def test_config_and_env():
    docs = objects()
    sts, c = container(docs)
    known = serve_keys()
    for e in c.get("env", []):
        n = e["name"]
        if n.startswith("FROND_"):
            check(n in known or n in PENDING_ENV,
                  "%s is not a variable of frond serve" % n)
        else:
            used = any("$(%s)" % n in x.get("value", "")
                       for x in c["env"])
            check(used, "%s is set but never used" % n)
    tmp = ft.tempdir()
    try:
        cfg = effective_config(docs, c, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for key, name in (("listen", "http"), ("resp_listen", "resp")):
        host, port = port_of(cfg[key])
        check(host in ("0.0.0.0", "::", "[::]"), "%s = %s: the kubelet and "
              "other pods cannot reach it" % (key, cfg[key]))
        check(ports.get(name) == port, "%s listens on %d, the container "
              "port %s is %r" % (key, port, name, ports.get(name)))
    # Logs for a log pipeline: JSON lines, each naming its node.
    check(cfg["log_format"] == "json", "log_format = %s" % cfg["log_format"])
    # Beyond loopback the server needs a token; it comes from the Secret.
    env = {e["name"]: e for e in c["env"]}
    tok = env.get("FROND_ADMIN_TOKEN", {})
    check("secretKeyRef" in tok.get("valueFrom", {}) and
          cfg["admin_token"] == "(set)", "no admin token from the Secret")
    # Node IDs: several replicas need a coordinator, not one static ID.
    check(sts["spec"]["replicas"] == 1 or
          not cfg["coordinator"].startswith("static"),
          "%d replicas with coordinator %s" % (sts["spec"]["replicas"],
                                               cfg["coordinator"]))
    # The advertised address: the pod IP and the HTTP port.
    adv = pod_env(docs, c).get("FROND_ADVERTISE")
    check(adv is not None, "FROND_ADVERTISE is not set")
    if "FROND_ADVERTISE" in known:
        adv = cfg[known["FROND_ADVERTISE"]]
    check(port_of(adv) == (POD_IP, ports["http"]),
          "advertised %r, want the pod IP and port %d" % (adv, ports["http"]))
    # The high-water file and the node cache live on the claimed volume.
    claims = {v["metadata"]["name"] for v in sts["spec"]
              ["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    check(mounts.get(cfg["data_dir"]) in claims,
          "data_dir %s is not on a persistent volume (mounts %r)"
          % (cfg["data_dir"], mounts))
    check(c["securityContext"].get("readOnlyRootFilesystem") is True,
          "the root filesystem is writable")


def test_probes_and_drain():
    docs = objects()
    sts, c = container(docs)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    paths = reference_paths()
    for probe, want in (("startupProbe", {"/livez", "/healthz"}),
                        ("livenessProbe", {"/livez", "/healthz"}),
                        ("readinessProbe", {"/readyz"})):
        p = c.get(probe)
        check(p and "httpGet" in p, "no HTTP %s" % probe)
        path, port = p["httpGet"]["path"], p["httpGet"]["port"]
        check(path in paths, "%s: %s is not an endpoint" % (probe, path))
        check(path in want, "%s at %s, want one of %s" % (probe, path,
                                                          sorted(want)))
        check(port in ("http", ports["http"]), "%s on port %r, not the "
              "HTTP port" % (probe, port))
    pre = c["lifecycle"]["preStop"]["exec"]["command"]
    check(pre[0] == "sleep" and int(pre[1]) > 0, "preStop %r" % pre)
    tmp = ft.tempdir()
    try:
        drain_ms = int(effective_config(docs, c, tmp)["drain_timeout_ms"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    grace = sts["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    check(grace >= int(pre[1]) + drain_ms / 1000 + 5,
          "terminationGracePeriodSeconds %d leaves no room for preStop %ss "
          "and drain_timeout_ms %d" % (grace, pre[1], drain_ms))


def test_dockerfile():
    docs = objects()
    sts, c = container(docs)
    with open(os.path.join(DIR, "Dockerfile")) as f:
        text = f.read()
    check(re.search(r"^FROM debian:12", text, re.M), "not Debian 12")
    with open(os.path.join(SRC, "scripts", "deb.sh")) as f:
        deb = f.read()
    check("frond_${version}_$arch.deb" in deb, "deb.sh names its package "
          "otherwise")
    check(re.search(r"apt-get install .*/tmp/frond_\*_amd64\.deb", text),
          "the Dockerfile does not install the package")
    user = re.search(r"^USER (\d+):(\d+)$", text, re.M)
    sc = sts["spec"]["template"]["spec"]["securityContext"]
    check(user and (int(user.group(1)), int(user.group(2))) ==
          (sc["runAsUser"], sc["runAsGroup"]),
          "the image's USER and the pod's runAsUser differ")
    check(re.search(r'^ENTRYPOINT \["frond"\]', text, re.M) and
          c["command"] == ["frond"], "entrypoint")


def test_init_check():
    """An init container runs `frond check` before the server: the same
    image, file, environment, volumes and sandbox, so that it checks what
    the server's start will meet; its configuration check passes on the
    pod's file and environment."""
    docs = objects()
    sts, c = container(docs)
    inits = sts["spec"]["template"]["spec"].get("initContainers", [])
    check(len(inits) == 1, "%d init containers" % len(inits))
    i = inits[0]
    args = i.get("command", []) + i.get("args", [])
    serve = c.get("command", []) + c.get("args", [])
    check(args[:2] == ["frond", "check"] and args[2:] == serve[2:],
          "the init container runs %r, the server %r" % (args, serve))
    for key in ("image", "env", "volumeMounts", "securityContext"):
        check(i.get(key) == c.get(key), "the init container's %s differs "
              "from the server's" % key)
    tmp = ft.tempdir()
    try:
        conf = os.path.join(tmp, "frond.conf")
        cfg = one(docs, "ConfigMap")["data"]["frond.conf"]
        with open(conf, "w") as f:
            f.write(cfg)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("FROND_")}
        env.update(pod_env(docs, i))
        r = subprocess.run([ft.FROND_BIN, "check", "--json", "--config",
                            conf], capture_output=True, text=True,
                           timeout=120, env=env, cwd=tmp)
        rows = {x["check"]: x for x in json.loads(r.stdout)}
        check(rows["config"]["status"] == "ok", "frond check refuses the "
              "pod's configuration: %r" % rows["config"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_objects, test_config_and_env, test_probes_and_drain,
             test_dockerfile, test_init_check])
