"""`meson install`: the installed demo runs without LD_LIBRARY_PATH (a relative install rpath
finds the library installed beside it), and pkg-config, the header and the demo agree."""
import os
import pathlib
import subprocess

import pytest

from isvtest import demo_path


def build_dir():
    return pathlib.Path(demo_path()).resolve().parent.parent.parent


def test_installed_demo_finds_its_library(tmp_path):
    b = build_dir()
    if not (b / "build.ninja").exists():
        pytest.skip("no meson build directory beside the demo")
    dest = tmp_path / "root"
    r = subprocess.run(["meson", "install", "-C", str(b), "--no-rebuild", "--quiet",
                        "--destdir", str(dest)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    demos = list(dest.rglob("bin/inferserve-demo"))
    assert len(demos) == 1, demos
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = subprocess.run([str(demos[0]), "--help"], capture_output=True, text=True, env=env,
                       timeout=10)
    assert r.returncode == 0 and "usage: inferserve-demo" in r.stdout, r.stderr
    ldd = subprocess.run(["ldd", str(demos[0])], capture_output=True, text=True).stdout
    line = next(x for x in ldd.splitlines() if "libinferserve.so" in x)
    assert str(dest) in line, line  # the copy installed beside it, not the build tree's
    pcs = list(dest.rglob("pkgconfig/libinferserve.pc"))
    assert len(pcs) == 1
    pc = pcs[0].read_text()
    desc = next(x for x in pc.splitlines() if x.startswith("Description:"))
    for absent in ("TF Serving", "Vertex", "grps"):  # not served yet: not promised
        assert absent not in desc, desc
    header = next(dest.rglob("include/inferserve.h")).read_text()
    assert "DESIGN.md" not in header and "PROTOCOLS.md" not in header
