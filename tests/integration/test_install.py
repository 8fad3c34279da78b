"""`meson install` puts the header, the shared library and the pkg-config file in place, and a
host program builds against them with pkg-config alone and runs (no build-tree paths); the
installed demo runs without LD_LIBRARY_PATH (a relative install rpath finds the library
installed beside it); pkg-config and the header promise nothing that is not there."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_dir():
    demo = os.environ.get("INFERSERVE_DEMO")
    if demo:
        return pathlib.Path(demo).resolve().parents[2]
    return ROOT / "build"


def sanitize_flags():
    """The build's b_sanitize, so a host linking an instrumented library is instrumented too."""
    out = subprocess.run(["meson", "introspect", str(build_dir()), "--buildoptions"],
                         capture_output=True, text=True, check=True).stdout
    for opt in json.loads(out):
        if opt["name"] == "b_sanitize" and opt["value"] not in ("none", ""):
            return ["-fsanitize=" + opt["value"]]
    return []


HOST = r"""
#include <inferserve.h>
#include <stdio.h>
#include <string.h>
static int ok;
static int copy(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd; const int64_t *s = isv_tensor_shape(x, &nd);
  void *y;
  int rc = isv_request_alloc_output(r, "y", ISV_INT32, s, nd, &y);
  if (rc) return rc;
  memcpy(y, isv_tensor_data(x), isv_tensor_byte_size(x));
  return isv_request_complete(r, 0, NULL);
}
static void done(isv_request *r, int status, void *d) {
  (void)d;
  const int32_t *y = isv_tensor_data(isv_request_output(r, "y"));
  ok = status == 0 && y[2] == 7;
  isv_request_free(r);
}
int main(void) {
  uv_loop_t loop; uv_loop_init(&loop);
  isv_server *srv;
  if (isv_server_new(&loop, NULL, &srv)) return 1;
  isv_model_config *c;
  if (isv_model_config_new("m", &c)) return 1;
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_INT32, any, 1);
  isv_model_config_add_output(c, "y", ISV_INT32, any, 1);
  isv_backend be = {sizeof be, copy, NULL};
  isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  isv_model_config_free(c);
  isv_request *r; int64_t n = 3; int32_t x[] = {5, 6, 7};
  isv_request_new(srv, "m", NULL, &r);
  isv_request_add_input(r, "x", ISV_INT32, &n, 1, x, sizeof x, ISV_STATIC);
  isv_server_infer(srv, r, done, NULL);
  isv_server_close(srv, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  printf("%s %s\n", ok ? "ok" : "bad", isv_version());
  return ok && uv_loop_close(&loop) == 0 ? 0 : 1;
}
"""


def test_meson_install_and_pkg_config(tmp_path):
    dest = tmp_path / "dest"
    r = subprocess.run(["meson", "install", "-C", str(build_dir()), "--destdir", str(dest),
                        "--no-rebuild", "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = dest / "usr" / "local"
    headers = list(prefix.rglob("inferserve.h"))
    sos = list(prefix.rglob("libinferserve.so*"))
    pcs = list(prefix.rglob("libinferserve.pc"))
    assert headers and sos and pcs, (headers, sos, pcs)
    pc = pcs[0].read_text()
    assert "Requires: libuv" in pc, pc
    # Build a host with pkg-config only, pointing it at the staged prefix.
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcs[0].parent),
               PKG_CONFIG_SYSROOT_DIR=str(dest))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libinferserve"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    src = tmp_path / "host.c"
    src.write_text(HOST)
    exe = tmp_path / "host"
    r = subprocess.run(["cc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Werror", str(src),
                        "-o", str(exe)] + sanitize_flags() + flags, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    libdir = sos[0].parent
    r = subprocess.run([str(exe)], env=dict(os.environ, LD_LIBRARY_PATH=str(libdir)),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("ok "), r.stdout + r.stderr


def test_installed_demo_finds_its_library(tmp_path):
    dest = tmp_path / "root"
    r = subprocess.run(["meson", "install", "-C", str(build_dir()), "--no-rebuild", "--quiet",
                        "--destdir", str(dest)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    demos = list(dest.rglob("bin/inferserve-demo"))
    assert len(demos) == 1, demos
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = subprocess.run([str(demos[0]), "--help"], capture_output=True, text=True, env=env,
                       timeout=10)
    assert r.returncode == 0 and "usage: inferserve-demo" in r.stdout, r.stderr
    ldd = subprocess.run(["ldd", str(demos[0])], capture_output=True, text=True, env=env).stdout
    line = next(x for x in ldd.splitlines() if "libinferserve.so" in x)
    assert str(dest) in line, line  # the copy installed beside it, not the build tree's
    pc = next(dest.rglob("pkgconfig/libinferserve.pc")).read_text()
    desc = next(x for x in pc.splitlines() if x.startswith("Description:"))
    for served in ("KServe V2", "TensorFlow Serving", "Vertex", "grps"):
        assert served in desc, desc
    header = next(dest.rglob("include/inferserve.h")).read_text()
    assert "DESIGN.md" not in header and "PROTOCOLS.md" not in header


def test_only_isv_symbols_are_exported():
    so = next(build_dir().glob("lib/libinferserve.so.*.*.*"))
    out = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True,
                         check=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    leaked = [n for n in names if not n.startswith("isv_") and not n.startswith("_")]
    assert names and not leaked, leaked[:20]
    assert "isv_server_new" in names and "isv_request_complete" in names
