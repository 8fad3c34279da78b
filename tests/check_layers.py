#!/usr/bin/env python3
"""The layer rule of docs/ARCHITECTURE.md, checked on the sources (run by the unit suite):
every header of a guarded layer includes its layer.h first (that guard is what makes an
upward include fail to compile), no file includes a layer it may not use, and inside core/
each file (x.c and x.h: module x) includes the headers of the modules below it only, in
CORE_ORDER — no include points sideways or up, so the core has no circle."""
import os
import re
import sys

ALLOWED = {  # layer -> the layers its files may include
    "codec": {"codec"},
    "core": {"core", "codec"},
    "transport": {"transport", "codec"},
    "protocol": {"protocol", "core", "transport", "codec"},
}
GUARDED = ("core", "transport", "protocol")

# core/'s modules, bottom first: each may include only the ones before it. A new file takes
# its place here (the check fails until it has one).
CORE_ORDER = [
    "layer", "error", "arena", "timeheap", "spin", "pool", "stats", "clients", "logset", "traceset", "options", "sequence",
    "shm", "warmup_cfg", "ensemble_cfg", "registry", "core", "watch", "resolve", "offload",
    "request", "shm_tensor", "validate", "classify", "batch", "responses", "rcache", "group",
    "queries", "repository", "scheduler", "nested", "ensemble", "warmup", "lifecycle",
]

root = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "lib")
problems = []
for layer, allowed in ALLOWED.items():
    d = os.path.join(root, layer)
    for name in sorted(os.listdir(d)):
        if not name.endswith((".c", ".h")):
            continue
        path = os.path.join(d, name)
        text = open(path, encoding="utf-8").read()
        includes = re.findall(r'^#include "([^"]+)"', text, re.M)
        if layer in GUARDED and name.endswith(".h") and name != "layer.h":
            if not includes or includes[0] != layer + "/layer.h":
                problems.append('%s: the first include must be "%s/layer.h"' % (path, layer))
        for inc in includes:
            other = inc.split("/")[0] if "/" in inc else layer
            if other in ALLOWED and other not in allowed:
                problems.append("%s includes %s: %s may not use %s" % (path, inc, layer, other))
core_dir = os.path.join(root, "core")
rank = {m: i for i, m in enumerate(CORE_ORDER)}
for name in sorted(os.listdir(core_dir)):
    if not name.endswith((".c", ".h")):
        continue
    mod = name.rsplit(".", 1)[0]
    path = os.path.join(core_dir, name)
    if mod not in rank:
        problems.append("%s: module %r has no place in CORE_ORDER (tests/check_layers.py)"
                        % (path, mod))
        continue
    text = open(path, encoding="utf-8").read()
    for inc in re.findall(r'^#include "core/([^"]+)\.h"', text, re.M):
        if inc == mod:
            continue
        if inc not in rank:
            problems.append("%s includes core/%s.h, which has no place in CORE_ORDER" % (path, inc))
        elif rank[inc] > rank[mod]:
            problems.append("%s includes core/%s.h: %s is above %s in core/ (CORE_ORDER), "
                            "an include must point down" % (path, inc, inc, mod))
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
