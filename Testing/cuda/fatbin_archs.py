#!/usr/bin/env python3
"""Which GPU architectures a static library's CUDA objects carry, and a check against the
list the build was configured with.

Each object compiled by nvcc holds its device code in an ELF section .nv_fatbin: a fat
binary header (magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries)
followed by entries (u16 kind: 1 PTX, 2 ELF machine code; u32 entry header size at offset 4,
u64 payload size at 8, u32 architecture at 28, e.g. 90 for sm_90 / compute_90).  This is read
here directly because cuobjdump, which lists the same (--list-elf, --list-ptx), is not part
of every CUDA installation (the nvcc-only one of the CI machine); where cuobjdump is given,
its lists must agree with this reader's.

fatbin_archs.py LIBRARY.a --expect 75-real,...,121 [--all 75-real,...,121 --nvcc NVCC] [--cuobjdump PATH]
  --expect: CMAKE_CUDA_ARCHITECTURES of the build (',' or ';' between entries): every object with device code must hold
            machine code (sm_N) for each N and N-real, and PTX (compute_N) for each N and
            N-virtual, and nothing else.
  --all:    what TK_CUDA_ARCHITECTURES=all (the default) resolves to; it must name every
            architecture `nvcc --list-gpu-code` lists (--nvcc), plus PTX of the newest.
Exit 0: as expected; 1: not; 2: bad command line or unreadable library.
"""
import argparse
import re
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2


def archive_members(data, path):
    """(name, bytes) of each member of a System V / GNU ar archive."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError(f"{path}: not an ar archive")
    pos, long_names = 8, b""
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name, size = header[:16].decode().rstrip(), int(header[48:58])
        body = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name == "//":
            long_names = body
        elif name in ("/", "/SYM64/"):
            continue  # symbol tables
        else:
            if name.startswith("/") and name[1:].isdigit():
                start = int(name[1:])
                name = long_names[start:long_names.index(b"/\n", start)].decode()
            yield name.rstrip("/"), body


def elf_section(obj, wanted):
    """The bytes of the named section of a 64-bit little-endian ELF object, or None."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    def section(i):
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", obj, shoff + i * shentsize)
        return name, offset, size
    _, str_off, _ = section(shstrndx)
    for i in range(shnum):
        name, offset, size = section(i)
        end = obj.index(b"\0", str_off + name)
        if obj[str_off + name:end].decode() == wanted:
            return obj[offset:offset + size]
    return None


def fatbin_entries(fatbin):
    """(kind, arch) of each entry of the fat binaries in a .nv_fatbin section."""
    entries, pos = [], 0
    while pos + 16 <= len(fatbin):
        magic, _, header_size, size = struct.unpack_from("<IHHQ", fatbin, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # fat binaries are 8-byte aligned; padding between them
            continue
        entry, end = pos + header_size, pos + header_size + size
        while entry < end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", fatbin, entry)
            arch, = struct.unpack_from("<I", fatbin, entry + 28)
            entries.append((kind, arch))
            entry += entry_header + payload
        pos = end
    return entries


def parse_expected(spec):
    """(sm set, compute set) of a CMAKE_CUDA_ARCHITECTURES list."""
    sm, ptx = set(), set()
    for item in filter(None, re.split(r"[;,]", spec)):
        m = re.fullmatch(r"(\d+)(-real|-virtual)?", item)
        if not m:
            raise ValueError(f"'{item}' is not an architecture number (NN, NN-real or NN-virtual)")
        if m.group(2) != "-virtual":
            sm.add(int(m.group(1)))
        if m.group(2) != "-real":
            ptx.add(int(m.group(1)))
    return sm, ptx


def names(prefix, archs):
    return " ".join(f"{prefix}_{a}" for a in sorted(archs)) or "none"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("library")
    p.add_argument("--expect", required=True)
    p.add_argument("--all", default=None)
    p.add_argument("--nvcc", default=None)
    p.add_argument("--cuobjdump", default=None)
    a = p.parse_args()
    try:
        expected_sm, expected_ptx = parse_expected(a.expect)
        with open(a.library, "rb") as f:
            data = f.read()
        objects = {}
        for name, obj in archive_members(data, a.library):
            fatbin = elf_section(obj, ".nv_fatbin")
            if fatbin:
                entries = fatbin_entries(fatbin)
                objects[name] = ({arch for kind, arch in entries if kind == KIND_ELF},
                                 {arch for kind, arch in entries if kind == KIND_PTX})
    except (OSError, ValueError, struct.error) as e:
        print(f"fatbin_archs.py: {e}", file=sys.stderr)
        return 2
    problems = []
    if not objects:
        problems.append(f"{a.library} holds no CUDA device code at all")
    for name, (sm, ptx) in sorted(objects.items()):
        if sm != expected_sm or ptx != expected_ptx:
            problems.append(f"{name}: machine code {names('sm', sm)}, PTX {names('compute', ptx)}; "
                            f"expected {names('sm', expected_sm)}, PTX {names('compute', expected_ptx)}")
    print(f"{a.library}: {len(objects)} CUDA objects, each with machine code {names('sm', expected_sm)} "
          f"and PTX {names('compute', expected_ptx)}" if not problems else f"{a.library}: not as configured")

    if a.cuobjdump:  # NVIDIA's own reading of the same library must agree
        for option, kind, index in (("--list-elf", "sm", 0), ("--list-ptx", "compute", 1)):
            r = subprocess.run([a.cuobjdump, option, a.library], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            listed = {int(x) for x in re.findall(rf"\.{kind}_(\d+)\.", r.stdout)}
            mine = set().union(*(o[index] for o in objects.values())) if objects else set()
            if listed != mine:
                problems.append(f"cuobjdump {option} lists {names(kind, listed)}, this reader {names(kind, mine)}")

    if a.all is not None:
        all_sm, all_ptx = parse_expected(a.all)
        r = subprocess.run([a.nvcc, "--list-gpu-code"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        supported = {int(x) for x in re.findall(r"sm_(\d+)", r.stdout)}
        if r.returncode or not supported:
            problems.append(f"{a.nvcc} --list-gpu-code failed: {r.stdout.strip()}")
        elif all_sm != supported or all_ptx != {max(supported)}:
            problems.append(f"the default (TK_CUDA_ARCHITECTURES=all) builds {names('sm', all_sm)} and PTX "
                            f"{names('compute', all_ptx)}; {a.nvcc} supports {names('sm', supported)}: a GPU of "
                            f"an architecture left out gets the CPU")
        elif (expected_sm, expected_ptx) != (all_sm, all_ptx):
            print(f"note: this build was narrowed with TK_CUDA_ARCHITECTURES; the default builds "
                  f"{names('sm', all_sm)} and PTX {names('compute', all_ptx)}")
    for problem in problems:
        print("FAIL: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
