"""deploy/kubernetes/*.yaml, deploy/Containerfile and the Vertex note agree with the demo.

No cluster or cloud here, and the suite builds no image (scripts/container-check.sh does, with
podman, in ~3 min): these are static checks plus the demo run with the manifests' own arguments
(their listen addresses moved to free loopback ports):
- every manifest parses (python3-yaml) and is the kind expected;
- every flag in a container's args (and the Containerfile's CMD) is one `inferserve-demo --help`
  lists, and the demo accepts the whole argument list;
- the container ports are exactly the ports the args make the demo listen on, the Service's
  target ports name them, the probes answer 200 there (live, ready), REST and gRPC work on the
  ports meant for them;
- the preStop hook's URL takes the demo offline (ready turns 503, live stays 200) and the grace
  period covers the hook's sleep plus the drain timeout of the args;
- the HPA scales that Deployment, the InferenceService uses that ServingRuntime;
- the Containerfile's commands, paths and meson options exist in the repository, and its run
  stage installs the packages of every shared library the demo links;
- the AIP_* variables make the demo serve Vertex's predict and health routes.
"""
import os
import re
import shlex
import subprocess

import grpc
import pytest
import requests

from fleet import free_ports
from grpc_stubs import load_stubs, simple_request
from isvtest import REPO_ROOT, demo_path

yaml = pytest.importorskip("yaml", reason="python3-yaml missing (scripts/install-deps.sh)")

DEPLOY = os.path.join(REPO_ROOT, "deploy")
K8S = os.path.join(DEPLOY, "kubernetes")
EXPECTED = {"deployment.yaml": ["Deployment"], "service.yaml": ["Service"],
            "hpa.yaml": ["HorizontalPodAutoscaler"],
            "kserve.yaml": ["ServingRuntime", "InferenceService"]}


def manifests():
    out = {}
    for name in sorted(os.listdir(K8S)):
        if name.endswith(".yaml"):
            with open(os.path.join(K8S, name)) as f:
                out[name] = [d for d in yaml.safe_load_all(f) if d is not None]
    return out


def one(kind):
    found = [d for docs in manifests().values() for d in docs if d["kind"] == kind]
    assert len(found) == 1, "%d %s manifests" % (len(found), kind)
    return found[0]


def help_flags():
    out = subprocess.run([demo_path(), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out.stdout))


def listens(args):
    """[(host, port)] of the --listen flags in args."""
    out = []
    for i, a in enumerate(args):
        v = args[i + 1] if a == "--listen" else a[9:] if a.startswith("--listen=") else None
        if v is not None:
            host, port = v.rsplit(":", 1)
            out.append((host, int(port)))
    return out


def run_with(start_demo, args):
    """The demo with args, each --listen moved to a free loopback port: (demo, {port: free})."""
    ports = [p for _, p in listens(args)]
    mapping = dict(zip(ports, free_ports(len(ports))))
    moved, i = [], 0
    while i < len(args):
        if args[i] == "--listen":
            moved += ["--listen", "127.0.0.1:%d" % mapping[listens(args[i:i + 2])[0][1]]]
            i += 2
            continue
        moved.append(args[i])
        i += 1
    d = start_demo(*moved)
    for p in mapping.values():
        assert any(line.endswith("listening on 127.0.0.1:%d" % p) for line in d.lines), d.lines
    return d, mapping


def http(port, path, method="GET", **kw):
    return requests.request(method, "http://127.0.0.1:%d%s" % (port, path), timeout=10, **kw)


def grpc_infer_ok(port):
    pb = load_stubs()
    with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
        stub = pb.pb_grpc.GRPCInferenceServiceStub(ch)
        assert stub.ServerReady(pb.pb.ServerReadyRequest(), timeout=10).ready
        req, _, _ = simple_request(pb.pb)
        resp = stub.ModelInfer(req, timeout=10)
        assert [o.name for o in resp.outputs] == ["OUTPUT0", "OUTPUT1"], resp


def rest_infer_ok(port):
    body = {"inputs": [{"name": n, "shape": [1, 16], "datatype": "INT32", "data": list(range(16))}
                       for n in ("INPUT0", "INPUT1")]}
    r = http(port, "/v2/models/simple/infer", "POST", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [2 * x for x in range(16)], r.text


def probe_port(probe, container):
    """The container port a probe's httpGet names (by name or number)."""
    port = probe["httpGet"]["port"]
    if isinstance(port, str):
        named = {p["name"]: p["containerPort"] for p in container["ports"] if "name" in p}
        assert port in named, "probe port %r is not a named container port %r" % (port, named)
        port = named[port]
    return port


def check_flags(args, where):
    unknown = sorted({a.split("=")[0] for a in args if a.startswith("--")} - help_flags())
    assert not unknown, "%s passes flags inferserve-demo --help does not list: %s" % (where,
                                                                                     unknown)


# ------------------------------------------------------------------------------------------
def test_manifests_parse():
    flags = help_flags()
    assert "--drain-timeout-ms" in flags and "--listen" in flags and "--bogus" not in flags, flags
    found = manifests()
    assert sorted(found) == sorted(EXPECTED), "unexpected files in %s: %s" % (K8S, sorted(found))
    for name, docs in found.items():
        assert [d["kind"] for d in docs] == EXPECTED[name], name
        for d in docs:
            assert d.get("apiVersion") and d.get("metadata", {}).get("name"), (name, d)


def test_deployment_service_probes_and_drain(start_demo):
    dep, svc = one("Deployment"), one("Service")
    pod = dep["spec"]["template"]
    (c,) = pod["spec"]["containers"]
    args = [str(a) for a in c["args"]]
    check_flags(args, "deployment.yaml")

    # labels: the Deployment selects its pods, the Service selects them too
    labels = pod["metadata"]["labels"]
    for sel in (dep["spec"]["selector"]["matchLabels"], svc["spec"]["selector"]):
        assert all(labels.get(k) == v for k, v in sel.items()), (sel, labels)

    # ports: the container declares exactly what the args listen on, on every interface
    declared = {p["containerPort"] for p in c["ports"]}
    assert {p for _, p in listens(args)} == declared, (args, c["ports"])
    assert all(h == "0.0.0.0" for h, _ in listens(args)), "a pod must listen beyond loopback"
    named = {p["name"]: p["containerPort"] for p in c["ports"]}
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    assert set(svc_ports) == {"http", "grpc"}, svc_ports
    for p in svc_ports.values():
        assert p["targetPort"] in named or p["targetPort"] in declared, p
    assert svc_ports["grpc"]["appProtocol"] == "kubernetes.io/h2c"

    d, moved = run_with(start_demo, args)
    port_of = lambda target: moved[named.get(target, target)]  # noqa: E731

    # probes answer 200 where they point
    live, ready = c["livenessProbe"], c["readinessProbe"]
    assert live["httpGet"]["path"] == "/v2/health/live"
    assert ready["httpGet"]["path"] == "/v2/health/ready"
    for probe in (live, ready):
        r = http(moved[probe_port(probe, c)], probe["httpGet"]["path"])
        assert r.status_code == 200, (probe, r.status_code, r.text)

    # each Service port does what its name says
    rest_infer_ok(port_of(svc_ports["http"]["targetPort"]))
    grpc_infer_ok(port_of(svc_ports["grpc"]["targetPort"]))

    # preStop: its URL takes the replica offline; the grace period covers sleep + drain
    cmd = c["lifecycle"]["preStop"]["exec"]["command"]
    script = cmd[-1]
    m = re.search(r"http://127\.0\.0\.1:(\d+)(/[^\s;&|]+)", script)
    assert m, "no local URL in the preStop hook: %r" % cmd
    assert int(m.group(1)) in declared, "preStop calls a port the container does not listen on"
    assert m.group(2) == "/grps/v1/health/offline", script
    assert shlex.split(script)[0] == "curl" and cmd[:2] == ["/bin/sh", "-c"], cmd
    r = http(moved[int(m.group(1))], m.group(2))
    assert r.status_code == 200, r.text
    assert http(moved[probe_port(ready, c)], "/v2/health/ready").status_code == 503
    assert http(moved[probe_port(live, c)], "/v2/health/live").status_code == 200
    rest_infer_ok(port_of("http"))  # offline still serves: in-flight and late requests finish

    sleep = re.search(r"sleep (\d+)", script)
    assert sleep, script
    drain_ms = int(args[args.index("--drain-timeout-ms") + 1])
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    assert grace >= int(sleep.group(1)) + drain_ms / 1000, \
        "terminationGracePeriodSeconds %d < preStop sleep %s s + drain %d ms" % (
            grace, sleep.group(1), drain_ms)


def test_hpa_scales_the_deployment():
    dep, hpa = one("Deployment"), one("HorizontalPodAutoscaler")
    ref = hpa["spec"]["scaleTargetRef"]
    assert (ref["kind"], ref["name"]) == ("Deployment", dep["metadata"]["name"])
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    cpu_targets = [m for m in hpa["spec"]["metrics"] if m["resource"]["name"] == "cpu"]
    if cpu_targets:  # Utilization is relative to the request: the container must have one
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        assert c["resources"]["requests"]["cpu"], c


def test_kserve_runtime_and_inference_service(start_demo):
    sr, isvc = one("ServingRuntime"), one("InferenceService")
    assert {"v2", "grpc-v2"} <= set(sr["spec"]["protocolVersions"]), sr["spec"]
    pred = isvc["spec"]["predictor"]["model"]
    assert pred["runtime"] == sr["metadata"]["name"]
    assert pred["modelFormat"]["name"] in [f["name"] for f in sr["spec"]["supportedModelFormats"]]
    assert pred.get("protocolVersion", "v2") in sr["spec"]["protocolVersions"]

    (c,) = sr["spec"]["containers"]
    assert c["name"] == "kserve-container"
    args = [str(a) for a in c["args"]]
    check_flags(args, "kserve.yaml")
    ports = {p for _, p in listens(args)}
    assert {p["containerPort"] for p in c["ports"]} <= ports, (c["ports"], args)
    assert 8080 in ports and 9000 in ports, "KServe's REST 8080 and gRPC 9000: %r" % args

    d, moved = run_with(start_demo, args)
    for probe in (c["livenessProbe"], c["readinessProbe"]):
        r = http(moved[probe_port(probe, c)], probe["httpGet"]["path"])
        assert r.status_code == 200, (probe, r.text)
    rest_infer_ok(moved[8080])
    grpc_infer_ok(moved[9000])


# ------------------------------------------------------------------------------------------
def containerfile():
    """[(instruction, argument text)] with continuation lines joined, comments dropped."""
    lines, cur = [], ""
    for raw in open(os.path.join(DEPLOY, "Containerfile")):
        line = raw.rstrip("\n")
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        instr, _, rest = cur.strip().partition(" ")
        lines.append((instr.upper(), rest.strip()))
        cur = ""
    return lines


def dpkg_owner(path):
    """The Debian package that ships path ('' if none): tried as linked, resolved, and across
    the /lib <-> /usr/lib merge, because dpkg knows a file by the path its package used."""
    real = os.path.realpath(path)
    cands = [path, real]
    for p in (path, real):
        cands.append(p[4:] if p.startswith("/usr/") else "/usr" + p)
    for p in cands:
        out = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.split(":")[0]
    return ""


def test_containerfile_agrees_with_the_repository():
    import json
    steps = containerfile()
    runs = [a for i, a in steps if i == "RUN"]
    build = runs[0]
    # the build stage: the project's scripts (the production build: scripts/pgo.sh, its build
    # directory first, then meson options) and meson install
    for script in ("install-deps.sh", "pgo.sh"):
        assert "scripts/" + script in build, script
        assert os.access(os.path.join(REPO_ROOT, "scripts", script), os.X_OK), script
    assert re.search(r"scripts/pgo\.sh /\S+ ", build), "pgo.sh's first argument: the build dir"
    options = open(os.path.join(REPO_ROOT, "meson_options.txt")).read()
    for opt in re.findall(r"-D(\w+)=", build):
        if opt in ("buildtype", "prefix"):
            continue
        assert re.search(r"option\('%s'" % opt, options), "no meson option %r" % opt
    prefix = re.search(r"--prefix=(\S+)", build).group(1)
    assert "meson install -C %s" % re.search(r"scripts/pgo\.sh (\S+)", build).group(1) in build
    # the context leaves out local build directories (gigabytes) and .git
    ignored = open(os.path.join(REPO_ROOT, ".dockerignore")).read().split("\n")
    assert "/build*" in ignored and ".git" in ignored, ignored
    # COPY . . copies the repository; the installed demo is what ENTRYPOINT runs
    copies = [a for i, a in steps if i == "COPY"]
    assert ". ." in copies, copies
    assert any(a == "--from=build %s %s" % (prefix, prefix) for a in copies), copies
    demo_meson = open(os.path.join(REPO_ROOT, "examples", "demo", "meson.build")).read()
    assert re.search(r"executable\('inferserve-demo'[^)]*install : true", demo_meson, re.S)
    (entry,) = [json.loads(a) for i, a in steps if i == "ENTRYPOINT"]
    assert entry == [prefix + "/bin/inferserve-demo"], entry
    (cmd,) = [json.loads(a) for i, a in steps if i == "CMD"]
    check_flags(cmd, "Containerfile CMD")
    (expose,) = [a.split() for i, a in steps if i == "EXPOSE"]
    assert {int(p) for p in expose} == {p for _, p in listens(cmd)}

    # the run stage installs the package of every shared library the demo links (other than
    # libc's own and the project's library, which is copied)
    runtime = runs[1]
    pkgs = set(re.search(r"apt-get install -y --no-install-recommends ([^&]+)", runtime)
               .group(1).split())
    ldd = subprocess.run(["ldd", demo_path()], capture_output=True, text=True, timeout=30).stdout
    libs = re.findall(r"^\s*(lib\S+\.so\S*) => (\S+)", ldd, re.M)
    for name, path in libs:
        if name.startswith(("libc.so", "libm.so", "libinferserve", "libpthread", "libdl")) or \
                "sanitizer" in path or name.startswith(("libasan", "libubsan", "libstdc++",
                                                        "libgcc_s")):
            continue
        owner = dpkg_owner(path)
        assert owner in pkgs, "the demo links %s (Debian package %r), not installed by the " \
            "Containerfile's run stage %r" % (name, owner, sorted(pkgs))
    assert "curl" in pkgs, "the preStop hook (deployment.yaml) runs curl"


def test_vertex_variables(start_demo):
    (port,) = free_ports(1)
    d = start_demo(env={"AIP_HTTP_PORT": str(port), "AIP_PREDICT_ROUTE": "/predict-x",
                        "AIP_HEALTH_ROUTE": "/health-x"})
    assert any(line.endswith("listening on 0.0.0.0:%d" % port) for line in d.lines), d.lines
    assert http(port, "/health-x").status_code == 200
    r = http(port, "/predict-x", "POST", json={"instances": [1.0, 2.0, 5.0]})
    assert r.status_code == 200, r.text
    assert r.json()["predictions"] == [3.5, 4.0, 5.5], r.text
    assert http(port, "/grps/v1/health/offline").status_code == 200
    assert http(port, "/health-x").status_code == 503
    for var in ("AIP_HTTP_PORT", "AIP_PREDICT_ROUTE", "AIP_HEALTH_ROUTE"):
        assert var in open(os.path.join(DEPLOY, "vertex", "README.md")).read()
        assert var in open(os.path.join(REPO_ROOT, "examples", "demo", "main.c")).read()
