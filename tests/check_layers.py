#!/usr/bin/env python3
"""The layer rule of docs/ARCHITECTURE.md, checked on the sources (run by the unit suite):
every header of a guarded layer includes its layer.h first (that guard is what makes an
upward include fail to compile), and no file includes a layer it may not use."""
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
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
