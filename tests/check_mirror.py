#!/usr/bin/env python3
"""h2o's layout, checked (run by the unit suite): every lib/[<layer>/]<x>.c has its
tests/unit/test_<x>.c, or is listed below with where it is tested instead; every
tests/unit/test_*.c belongs to a module (or is listed); and every one of them is built and run
by tests/meson.build — a test file that is never compiled is a gap nobody sees."""
import os
import re
import sys

# lib source -> the tests that cover it, when they are not named after it (and why)
COVERED_ELSEWHERE = {
    "core/logset.c": "the logging extension's settings: defaults, get, set and the levels' gate "
                     "on isv__core_log in test_v2_logging.c, which changes them",
    "core/traceset.c": "the trace extension's settings: sampling by level, rate and count, a "
                       "model's own settings and their clearing, through a real core in "
                       "test_scheduler.c (trace_settings_drive_the_sampling); the codecs that "
                       "change them in test_v2_trace.c; fuzz_trace_setting",
    "codec/pow10.c": "generated table: test 'pow10_table_generated' checks it against "
                     "gen_pow10.py; its values through test_numparse.c and test_numfmt.c",
    "protocol/v2.c": "the V2 front end's descriptor only: its routes in test_v2_http.c, its "
                     "methods in test_v2_grpc.c, its registration in test_builtin.c",
    "protocol/content_coding.c": "decoding coded bodies before routing, through the router: "
                                 "test_v2_http.c (coded_*), and end to end over HTTP/1.1 and h2c "
                                 "in tests/integration/test_compression.py",
    "server.c": "the public API over a real loop: test_server_inproc.c",
    "core/ensemble_cfg.c": "an ensemble's steps in a config (added, copied with the registry's "
                           "copy, freed): test_ensemble.c registers and runs them",
    "core/lifecycle.c": "a core's init and close, composition only: every test that makes a "
                        "core (test_core.c, core_fixture.c) and test_server_inproc.c",
    "core/warmup_cfg.c": "warmup samples in a config (copy, free, check): test_warmup.c's "
                         "config_rules, through isv__config_copy and isv__registry_check",
    "core/queries.c": "the queries front ends ask: test_core.c (online, readiness) and "
                      "test_resolve.c (which model a name means, and why not)",
    "core/shm_tensor.c": "tensors in shared memory regions: test_shm.c, beside the regions "
                         "(core/shm.c) they are read from and written to",
    "transport/memconn.c": "the memory seam is what test_http1.c and test_http2.c run the "
                           "engines on (transport_fixture.c, tf_setup_mem), and the connection "
                           "fuzzers (fuzz/conn_harness.c)",
    "protocol/tfs_http.c": "TF Serving's routes and handlers, end to end against the demo with "
                           "real clients (requests, curl over h2c): "
                           "tests/integration/test_tfserving.py; its codec in test_tfs_json.c",
    "protocol/tfs_grpc.c": "TF Serving's gRPC methods, end to end with grpcio stubs generated "
                           "from proto/tensorflow_serving.proto: "
                           "tests/integration/test_grpc_tfserving.py; its codec in "
                           "test_tfs_pb.c, its model stage in test_authz_differential.c",
    "protocol/grps_http.c": "grps's routes and handlers, end to end against the demo with real "
                            "clients (requests, curl over h2c): tests/integration/test_grps.py; "
                            "its codecs in test_grps_json.c, its mapping in test_grps_conv.c",
    "protocol/grps_grpc.c": "grps's gRPC methods, end to end with grpcio: "
                            "tests/integration/test_grps.py; its codec in test_grps_pb.c",
    "protocol/grps_meta.c": "grps's metadata YAML, through both front ends: "
                            "tests/integration/test_grps.py",
    "protocol/custom_http.c": "custom routes end to end against the demo's (requests, raw "
                              "sockets, curl over h2c): tests/integration/test_custom_routes.py; "
                              "their registration rules in test_server_inproc.c",
    "protocol/v2_shm.c": "the shared memory request decoders in test_shm.c (beside core/shm.c, "
                         "whose mirror it is); routes and methods end to end with requests, "
                         "curl over h2c and grpcio: tests/integration/test_shared_memory.py",
    "protocol/v2_repo_json.c": "the model repository's JSON codec: test_repository.c, with the "
                               "core side (lib/core/repository.c) it feeds",
    "protocol/v2_repo_pb.c": "the model repository's protobuf codec: test_repository.c",
    "protocol/openai_http.c": "the OpenAI front end's routes and handlers, end to end against the "
                              "demo with OpenAI's Node SDK and curl (HTTP/1.1 and h2c): "
                              "tests/integration/test_openai.py; its codec in test_openai.c and "
                              "test_openai_write.c, its mapping in test_openai_map.c",
    "protocol/v2_repo_http.c": "the model repository's REST handlers, end to end against the "
                               "demo: tests/integration/test_repository.py",
}
# tests/unit files that are not one module's mirror
NOT_A_MIRROR = {
    "test_span.c": "lib/codec/span.h, a header of inline comparisons (no .c of its own)",
    "test_decimal.c": "lib/codec/decimal.h, a header of one inline parser (no .c of its own)",
    "test_server_inproc.c": "lib/server.c and the public API as a host uses it",
    "test_cpp_host.cpp": "include/inferserve.h compiled and linked as C++17",
    "test_cpp_face.cpp": "include/inferserve.hpp, the header-only C++17 face",
    "test_cpp_async.cpp": "include/inferserve.hpp's asynchronous backends (isv::async_request)",
    "test_fail_malloc.c": "every allocation of the library failing in turn, through the API",
    "test_warm_requests.c": "a warm server's small requests calling its allocator not once (issue "
                            "#28), in process and over HTTP/1.1: the recycler's effect through "
                            "the whole server (lib/codec/recycler.c has test_recycler.c)",
    "test_queue_policy.c": "lib/core/scheduler.c's priorities and queue policies (issue #29), "
                           "beside test_scheduler.c, which holds the rest of that file's cases",
    "test_authz_differential.c": "the edge's model stage against what runs, on every route and "
                                 "gRPC method of every built-in front end (issue #34)",
}

root = sys.argv[1] if len(sys.argv) > 1 else "."
lib, unit = os.path.join(root, "lib"), os.path.join(root, "tests", "unit")
problems = []

modules = {}
for dirpath, _, files in os.walk(lib):
    for f in files:
        if f.endswith(".c"):
            rel = os.path.relpath(os.path.join(dirpath, f), lib)
            modules[rel] = f[:-2]
tests = sorted(f for f in os.listdir(unit) if f.startswith("test_"))

for rel, name in sorted(modules.items()):
    if rel in COVERED_ELSEWHERE:
        if os.path.exists(os.path.join(unit, "test_%s.c" % name)):
            problems.append("%s: has test_%s.c now; drop it from COVERED_ELSEWHERE" % (rel, name))
    elif not os.path.exists(os.path.join(unit, "test_%s.c" % name)):
        problems.append("lib/%s: no tests/unit/test_%s.c (or a reason in check_mirror.py)"
                        % (rel, name))
for rel in COVERED_ELSEWHERE:
    if rel not in modules:
        problems.append("COVERED_ELSEWHERE names lib/%s, which does not exist" % rel)

names = set(modules.values())
for t in tests:
    stem = os.path.splitext(t)[0][len("test_"):]
    if stem not in names and t not in NOT_A_MIRROR:
        problems.append("tests/unit/%s: mirrors no lib/ module (or a reason in check_mirror.py)" % t)

build = open(os.path.join(root, "tests", "meson.build"), encoding="utf-8").read()
built = set(re.findall(r"'(test_[a-z0-9_]+)'", build)) | set(
    re.findall(r"'unit/(test_[a-z0-9_]+)\.c(?:pp)?'", build))
for t in tests:
    if os.path.splitext(t)[0] not in built:
        problems.append("tests/unit/%s is not built by tests/meson.build" % t)

for p in problems:
    print(p)
print("%d modules, %d unit test files: %s" % (len(modules), len(tests),
                                              "ok" if not problems else "%d problems" % len(problems)))
sys.exit(1 if problems else 0)
