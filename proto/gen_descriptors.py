#!/usr/bin/env python3
"""Embed proto/'s descriptors in the library for gRPC server reflection (at build time).

Input: a FileDescriptorSet that protoc wrote (--include_imports: every file after the files it
imports). Output: a C file (protocol/descriptors.h's tables) with
  - each file's serialized FileDescriptorProto, byte for byte as protoc wrote it, and the
    indices of the files it imports, transitively (what a reflection answer carries with it);
  - every fully-qualified symbol — messages (nested ones too), their fields and oneofs, enums
    and their values, services, methods (<package>.<Service>.<Method>) — with its file and
    kind, sorted by name (bsearch): what protobuf's own descriptor pool finds a file by.
The wire format is read here with a few lines of its own (no protobuf package needed to build).
"""
import sys

KIND_MESSAGE, KIND_ENUM, KIND_SERVICE, KIND_METHOD, KIND_FIELD, KIND_ENUM_VALUE = range(6)


def fields(buf):
    """(number, wire type, value) of a serialized message: ints for varints, bytes otherwise."""
    i, n = 0, len(buf)

    def varint():
        nonlocal i
        shift = v = 0
        while True:
            if i >= n:
                raise ValueError("truncated varint")
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    while i < n:
        key = varint()
        num, wt = key >> 3, key & 7
        if wt == 0:
            yield num, wt, varint()
        elif wt == 2:
            ln = varint()
            yield num, wt, buf[i:i + ln]
            i += ln
        elif wt == 1:
            yield num, wt, buf[i:i + 8]
            i += 8
        elif wt == 5:
            yield num, wt, buf[i:i + 4]
            i += 4
        else:
            raise ValueError("unsupported wire type %d" % wt)


def strings(buf, num):
    return [v.decode() for f, wt, v in fields(buf) if f == num and wt == 2]


def one(buf, num, default=""):
    got = strings(buf, num)
    return got[-1] if got else default


def enum_symbols(enum, prefix, out):
    """EnumDescriptorProto: name 1, value 2 (name 1). Values live in the enum's own scope's
    parent, as protobuf scopes them ("pkg.Msg.SERVING", not "pkg.Msg.Status.SERVING")."""
    out.append((prefix + one(enum, 1), KIND_ENUM))
    for f, wt, v in fields(enum):
        if f == 2 and wt == 2:
            out.append((prefix + one(v, 1), KIND_ENUM_VALUE))


def message_symbols(msg, prefix, out):
    """DescriptorProto: name 1, field 2, nested_type 3, enum_type 4, oneof_decl 8."""
    name = prefix + one(msg, 1)
    out.append((name, KIND_MESSAGE))
    for f, wt, v in fields(msg):
        if f == 2 and wt == 2 or f == 8 and wt == 2:
            out.append((name + "." + one(v, 1), KIND_FIELD))
        elif f == 3 and wt == 2:
            message_symbols(v, name + ".", out)
        elif f == 4 and wt == 2:
            enum_symbols(v, name + ".", out)


def file_symbols(fd):
    """FileDescriptorProto: package 2, message_type 4, enum_type 5, service 6."""
    pkg = one(fd, 2)
    prefix = pkg + "." if pkg else ""
    out = []
    for f, wt, v in fields(fd):
        if f == 4 and wt == 2:
            message_symbols(v, prefix, out)
        elif f == 5 and wt == 2:
            enum_symbols(v, prefix, out)
        elif f == 6 and wt == 2:  # ServiceDescriptorProto: name 1, method 2 (name 1)
            svc = prefix + one(v, 1)
            out.append((svc, KIND_SERVICE))
            for m in (mv for mf, mwt, mv in fields(v) if mf == 2 and mwt == 2):
                out.append((svc + "." + one(m, 1), KIND_METHOD))
    return out


def c_bytes(data):
    lines = []
    for k in range(0, len(data), 16):
        lines.append("    " + " ".join("0x%02x," % b for b in data[k:k + 16]))
    return "\n".join(lines)


def main(src, dst):
    data = open(src, "rb").read()
    files = [v for f, wt, v in fields(data) if f == 1 and wt == 2]  # FileDescriptorSet.file
    names = [one(fd, 1) for fd in files]
    index = {n: i for i, n in enumerate(names)}
    if len(files) > 64:  # reflection.h: one bit per file
        raise SystemExit("gen_descriptors: more than 64 files")
    if len(index) != len(names):
        raise SystemExit("gen_descriptors: a file twice in the set")
    closures = []
    for fd in files:  # its imports, then theirs: each once, in the order first met
        seen, todo = [], list(strings(fd, 3))
        while todo:
            d = todo.pop(0)
            if d not in index:
                raise SystemExit("gen_descriptors: %s imports %s, not in the set "
                                 "(protoc --include_imports)" % (one(fd, 1), d))
            if index[d] not in seen:
                seen.append(index[d])
                todo.extend(strings(files[index[d]], 3))
        closures.append(seen)
    symbols = []
    for i, fd in enumerate(files):
        symbols += [(name, kind, i) for name, kind in file_symbols(fd)]
    symbols.sort(key=lambda s: s[0].encode())  # strcmp's order
    for a, b in zip(symbols, symbols[1:]):
        if a[0] == b[0]:
            raise SystemExit("gen_descriptors: symbol %s defined twice" % a[0])

    out = ["/* Generated by proto/gen_descriptors.py from protoc's descriptor set: do not edit. */",
           '#include "protocol/descriptors.h"', ""]
    for i, fd in enumerate(files):
        out.append("static const uint8_t file%d[%d] = {" % (i, len(fd)))
        out.append(c_bytes(fd))
        out.append("};")
        out.append("static const uint16_t deps%d[%d] = {%s};"
                   % (i, max(1, len(closures[i])), ", ".join(map(str, closures[i])) or "0"))
    out.append("")
    out.append("const isv__pb_file isv__pb_files[] = {")
    for i, n in enumerate(names):
        out.append('    {"%s", file%d, sizeof file%d, deps%d, %d},'
                   % (n, i, i, i, len(closures[i])))
    out.append("};")
    out.append("const size_t isv__pb_n_files = %d;" % len(files))
    out.append("")
    kinds = {KIND_MESSAGE: "ISV__PB_MESSAGE", KIND_ENUM: "ISV__PB_ENUM",
             KIND_SERVICE: "ISV__PB_SERVICE", KIND_METHOD: "ISV__PB_METHOD",
             KIND_FIELD: "ISV__PB_FIELD", KIND_ENUM_VALUE: "ISV__PB_ENUM_VALUE"}
    out.append("const isv__pb_symbol isv__pb_symbols[] = {")
    for name, kind, i in symbols:
        out.append('    {"%s", %s, %d},' % (name, kinds[kind], i))
    out.append("};")
    out.append("const size_t isv__pb_n_symbols = %d;" % len(symbols))
    open(dst, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: gen_descriptors.py DESCRIPTOR_SET OUT.c")
    main(sys.argv[1], sys.argv[2])
