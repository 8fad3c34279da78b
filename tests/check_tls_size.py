#!/usr/bin/env python3
"""What the library's thread-local storage costs every thread of its host (run by the unit
suite): a shared library's static TLS block (its PT_TLS segment) is set up — copied and zeroed,
so made resident — at the creation of each thread of the process that links it, whether or not
the thread ever calls the library. docs/memory.md promises it stays small: scratch buffers and
memos belong to a server, not to a thread. Reads the ELF program headers of the library given."""
import struct
import sys

LIMIT = 1024  # bytes of TLS per thread (today: 528, a grps error reply's text and a pointer)
PT_TLS = 7


def tls_size(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise SystemExit("%s: not an ELF file" % path)
    is64, little = data[4] == 2, data[5] == 1
    e = "<" if little else ">"
    if is64:
        phoff, = struct.unpack_from(e + "Q", data, 32)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 54)
    else:
        phoff, = struct.unpack_from(e + "I", data, 28)
        phentsize, phnum = struct.unpack_from(e + "HH", data, 42)
    for i in range(phnum):
        at = phoff + i * phentsize
        p_type, = struct.unpack_from(e + "I", data, at)
        if p_type != PT_TLS:
            continue
        # p_memsz: offset 40 in Elf64_Phdr, 20 in Elf32_Phdr
        return struct.unpack_from(e + ("Q" if is64 else "I"), data, at + (40 if is64 else 20))[0]
    return 0


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: check_tls_size.py path/to/libinferserve.so")
    n = tls_size(sys.argv[1])
    print("thread-local storage: %d bytes per thread (at most %d)" % (n, LIMIT))
    if n > LIMIT:
        print("FAIL: every thread of a host would pay %d bytes for the library's _Thread_local "
              "variables: keep scratch buffers and memos in a server (docs/memory.md)" % n)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
