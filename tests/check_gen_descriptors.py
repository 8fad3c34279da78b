#!/usr/bin/env python3
"""proto/gen_descriptors.py on a set of files that import each other (the library's own protos
import nothing, so the transitive closure is checked here): a.proto imports b.proto, which
imports c.proto and google/protobuf/empty.proto. Checks each file's deps array (the closure,
each once), that every file's bytes are protoc's, and that symbols — nested messages, enums,
services, methods — are there, sorted, with their file. Run by the unit suite."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

root = sys.argv[1] if len(sys.argv) > 1 else "."
gen = os.path.join(root, "proto", "gen_descriptors.py")
protoc = shutil.which("protoc")
if protoc is None:
    print("protoc not found: skipped")
    sys.exit(77)  # meson's "skipped"

PROTOS = {
    "c.proto": 'syntax = "proto3"; package t.c; message C { enum E { X = 0; } int32 v = 1; }\n',
    "b.proto": 'syntax = "proto3"; package t.b; import "c.proto"; '
               'import "google/protobuf/empty.proto"; message B { t.c.C c = 1; '
               'message Inner { message Deeper {} } }\n',
    "a.proto": 'syntax = "proto3"; package t.a; import "b.proto"; service S { '
               'rpc M(t.b.B) returns (t.b.B); rpc N(stream t.b.B) returns (stream t.b.B); }\n',
}

problems = []
with tempfile.TemporaryDirectory() as d:
    for name, text in PROTOS.items():
        open(os.path.join(d, name), "w").write(text)
    ds, out = os.path.join(d, "set.pb"), os.path.join(d, "out.c")
    subprocess.run([protoc, "--include_imports", "--descriptor_set_out=" + ds, "-I", d,
                    os.path.join(d, "a.proto")], check=True)
    subprocess.run([sys.executable, gen, ds, out], check=True)
    c = open(out).read()
    files = re.findall(r'\{"([^"]+)", file(\d+), sizeof file\d+, deps\d+, (\d+)\}', c)
    index = {name: int(i) for name, i, _ in files}
    deps = {int(i): [int(x) for x in m.split(",")] if int(n) else []
            for (i, m), (_, _, n) in zip(re.findall(r"deps(\d+)\[\d+\] = \{([^}]*)\}", c), files)}
    names = {int(i): name for name, i, _ in files}

    def closure(name):
        return sorted(names[k] for k in deps[index[name]])

    want = {"a.proto": ["b.proto", "c.proto", "google/protobuf/empty.proto"],
            "b.proto": ["c.proto", "google/protobuf/empty.proto"],
            "c.proto": [], "google/protobuf/empty.proto": []}
    for name, w in want.items():
        if name not in index:
            problems.append("%s missing from the tables" % name)
        elif closure(name) != w:
            problems.append("%s: deps %s, want %s" % (name, closure(name), w))
    syms = re.findall(r'\{"([^"]+)", (ISV__PB_\w+), (\d+)\}', c)
    if [s[0] for s in syms] != sorted((s[0] for s in syms), key=lambda x: x.encode()):
        problems.append("symbols not sorted")
    got = {s[0]: (s[1], names[int(s[2])]) for s in syms}
    for sym, kind, f in [("t.a.S", "ISV__PB_SERVICE", "a.proto"),
                         ("t.a.S.M", "ISV__PB_METHOD", "a.proto"),
                         ("t.a.S.N", "ISV__PB_METHOD", "a.proto"),
                         ("t.b.B", "ISV__PB_MESSAGE", "b.proto"),
                         ("t.b.B.Inner.Deeper", "ISV__PB_MESSAGE", "b.proto"),
                         ("t.c.C.E", "ISV__PB_ENUM", "c.proto"),
                         ("t.c.C.X", "ISV__PB_ENUM_VALUE", "c.proto"),  # the enum's scope
                         ("t.c.C.v", "ISV__PB_FIELD", "c.proto"),
                         ("t.b.B.c", "ISV__PB_FIELD", "b.proto"),
                         ("google.protobuf.Empty", "ISV__PB_MESSAGE", "google/protobuf/empty.proto")]:
        if got.get(sym) != (kind, f):
            problems.append("%s: %s, want %s" % (sym, got.get(sym), (kind, f)))
    # each file's bytes are those of protoc's set, in order
    blob = open(ds, "rb").read()
    for i, body in re.findall(r"static const uint8_t file(\d+)\[\d+\] = \{([^}]*)\}", c):
        data = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", body))
        if data not in blob:
            problems.append("file%s's bytes are not protoc's" % i)

if problems:
    print("\n".join(problems))
    sys.exit(1)
print("gen_descriptors: %d files, closures and symbols ok" % len(want))
