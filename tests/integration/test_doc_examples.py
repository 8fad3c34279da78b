"""Every shell example of README.md and docs/*.md runs against the demo, as a reader would run it.

The blocks are read from the Markdown at collection time (nothing is copied here), so a changed
route, flag or answer breaks this test, not the reader. A fenced block whose info string starts
with `sh` is one case, run by `bash -e -o pipefail` from the repository root; words after `sh`
say how:

    ```sh                 runs; must exit 0
    ```sh fails           runs; must exit non-zero (an example of an error answer)
    ```sh norun           not run: the install commands themselves, long-running servers,
                          tools Debian does not package (grpcurl)
    ```sh demo=A,B        runs against a demo of its own started with the flags A B
                          (e.g. demo=--shared-memory)

The docs address the demo's default ports, 8000 and 8001 (`localhost:8000`, `127.0.0.1:8001`);
the test starts its own demo on a free port and rewrites both to it (the demo serves every
protocol on every port). `curl` is a wrapper that adds `--fail-with-body` and a time limit, so
an answer of 400 or more fails the block unless the block is marked `fails`.

README.md's C++ embedding example (its ```cpp block) is compiled against the build's library,
run on a free port, and asked once over HTTP.
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

import pytest
import requests

from isvtest import Demo, demo_path, free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\S*)[ \t]*(.*)$")
PORT_RE = re.compile(r"\b(localhost|127\.0\.0\.1):800[01]\b")
BLOCK_TIMEOUT = 60


def blocks(lang):
    """[(path, line, info words, text)] of every fenced block of lang in the docs."""
    found = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            start, words, body = i + 1, m.group(2).split(), []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise AssertionError("%s:%d: unclosed ``` block" % (path, start))
            i += 1
            if m.group(1) == lang:
                found.append((path, start, words, "\n".join(body) + "\n"))
    return found


KNOWN_WORDS = ("norun", "fails")


def sh_cases():
    cases = []
    for path, line, words, text in blocks("sh"):
        for w in words:
            assert w in KNOWN_WORDS or w.startswith("demo="), \
                "%s:%d: unknown marker %r after ```sh" % (path, line, w)
        marks = [pytest.mark.skip(reason="marked norun")] if "norun" in words else []
        cases.append(pytest.param(words, text, id="%s:%d" % (path.relative_to(ROOT), line),
                                  marks=marks))
    return cases


@pytest.fixture(scope="module")
def doc_demo():
    d = Demo()
    yield d
    assert d.stop(signal.SIGTERM, 10.0) == 0, d.describe_exit(d.proc.returncode)


@pytest.fixture(scope="module")
def curl_wrapper(tmp_path_factory):
    """A directory whose `curl` adds --fail-with-body and a time limit to the real one."""
    real = shutil.which("curl")
    d = tmp_path_factory.mktemp("bin")
    w = d / "curl"
    w.write_text('#!/bin/sh\nexec %s --fail-with-body --max-time 30 "$@"\n' % real)
    w.chmod(0o755)
    # python3 is Debian's, whose python3-grpcio the gRPC examples use
    if os.path.exists("/usr/bin/python3"):
        (d / "python3").symlink_to("/usr/bin/python3")
    return d


def run_block(text, port, bindir):
    script = PORT_RE.sub(lambda m: "%s:%d" % (m.group(1), port), text)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ.get("PATH", "")))
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT), script


def test_markers_are_few():
    """norun is for what cannot run here; most examples must run."""
    cases = blocks("sh")
    norun = [c for c in cases if "norun" in c[2]]
    assert len(cases) >= 20, "fewer shell examples than expected: the extractor broke?"
    assert len(norun) * 4 <= len(cases), "too many norun blocks: %s" % [
        "%s:%d" % (p.name, ln) for p, ln, _, _ in norun]


@pytest.mark.parametrize("words,text", sh_cases())
def test_sh_example(words, text, doc_demo, curl_wrapper):
    flags = [w[len("demo="):].split(",") for w in words if w.startswith("demo=")]
    own = Demo(extra_args=flags[0]) if flags else None
    try:
        r, script = run_block(text, (own or doc_demo).port, curl_wrapper)
    finally:
        if own is not None:
            assert own.stop(signal.SIGTERM, 10.0) == 0, own.describe_exit(own.proc.returncode)
    shown = "script:\n%s\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
        script, r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    if "fails" in words:
        assert r.returncode != 0, "the block should fail and did not\n" + shown
    else:
        assert r.returncode == 0, shown
    assert doc_demo.alive(), "the demo died: " + doc_demo.describe_exit(doc_demo.proc.returncode)


def build_dir():
    return pathlib.Path(demo_path()).resolve().parents[2]


def sanitize_flags():
    out = subprocess.run(["meson", "introspect", str(build_dir()), "--buildoptions"],
                         capture_output=True, text=True, check=True).stdout
    import json
    for opt in json.loads(out):
        if opt["name"] == "b_sanitize" and opt["value"] not in ("none", ""):
            return ["-fsanitize=" + opt["value"]]
    return []


def test_readme_cpp_example(tmp_path):
    found = [b for b in blocks("cpp") if b[0].name == "README.md"]
    assert len(found) == 1, "README.md should have one ```cpp block (the embedding example)"
    port = free_port()
    src = tmp_path / "doubler.cpp"
    src.write_text(found[0][3].replace("8080", str(port)))
    lib = build_dir() / "lib"
    uv = subprocess.run(["pkg-config", "--cflags", "--libs", "libuv"], capture_output=True,
                        text=True, check=True).stdout.split()
    exe = tmp_path / "doubler"
    cc = subprocess.run(["c++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "include"),
                         str(src), "-o", str(exe), "-L", str(lib), "-linferserve",
                         "-Wl,-rpath," + str(lib)] + uv + sanitize_flags(),
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    proc = subprocess.Popen([str(exe)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = "http://127.0.0.1:%d/v2/models/doubler/infer" % port
        body = {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2]}]}
        deadline = time.monotonic() + 10
        while True:
            try:
                r = requests.post(url, json=body, timeout=5)
                break
            except requests.ConnectionError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "the README's example never listened"
                time.sleep(0.05)
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][0]["data"] == [2.0, 4.0]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_links_resolve():
    """Every relative link of the docs names a file that exists (and a heading it has)."""
    broken = []
    for path in DOCS + [ROOT / "CHANGELOG.md"]:
        for target in LINK_RE.findall(path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, frag = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                broken.append("%s: %s" % (path.name, target))
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                broken.append("%s: %s (no such heading)" % (path.name, target))
    assert not broken, "broken links:\n" + "\n".join(broken)


def header_errors():
    text = (ROOT / "include" / "inferserve.h").read_text()
    return {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"XX\((E[A-Z]+), -\d+, (\d+), (\d+),", text)}


GRPC_NAMES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
              5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED",
              8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION", 10: "ABORTED",
              11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
              15: "DATA_LOSS", 16: "UNAUTHENTICATED"}


def test_error_table_is_the_headers():
    """docs/operations.md's table of codes is ISV_ERRNO_MAP, row for row."""
    want = {k: (h, GRPC_NAMES[g]) for k, (h, g) in header_errors().items()}
    got = {}
    for line in (ROOT / "docs" / "operations.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for i in range(0, len(cells) - 2, 4):
            if re.fullmatch(r"E[A-Z]+", cells[i]) and cells[i + 1].isdigit():
                got[cells[i]] = (int(cells[i + 1]), cells[i + 2])
    assert got == want


def test_version_is_one_number():
    """meson.build's version, the header's ISV_VERSION_* and CHANGELOG.md's form agree."""
    meson = re.search(r"version\s*:\s*'(\d+)\.(\d+)\.(\d+)'", (ROOT / "meson.build").read_text())
    header = (ROOT / "include" / "inferserve.h").read_text()
    hv = tuple(re.search(r"#define ISV_VERSION_%s (\d+)" % k, header).group(1)
               for k in ("MAJOR", "MINOR", "PATCH"))
    assert meson.groups() == hv
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog
    assert "%s.%s.%s" % hv in changelog


def test_every_function_states_its_thread():
    """Every public function of inferserve.h is documented (Doxygen's /** */) with its thread
    rule in its own comment, so the generated reference shows it beside the function (the
    section banners are not part of the reference). Doxygen's warnings-as-errors build
    (ninja -C build docs) checks the parameters and return values."""
    lines = (ROOT / "include" / "inferserve.h").read_text().split("\n")
    missing = []
    for i, line in enumerate(lines):
        if not line.startswith("ISV_EXTERN"):
            continue
        name = re.search(r"(isv_\w+)\(", line).group(1)
        k = i - 1
        if not lines[k].rstrip().endswith("*/"):
            missing.append(name + " (no doc comment right above it)")
            continue
        while not lines[k].lstrip().startswith("/*"):
            k -= 1
        doc = " ".join(lines[k:i])
        if not lines[k].lstrip().startswith("/**"):
            missing.append(name + " (a /* comment, not /**)")
        elif "thread" not in doc.lower():
            missing.append(name + " (no thread rule)")
    assert not missing, "\n".join(missing)
