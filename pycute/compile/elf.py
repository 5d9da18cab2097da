"""Resource usage read from a cubin's ELF sections (what ``cuobjdump --dump-resource-usage`` reports).

Registers: the ``EIATTR_REGCOUNT`` attribute (0x2f) of the ``.nv.info`` section, ``(symbol index, count)`` per
kernel, checked against ptxas's own "Used N registers". Static shared memory: the size of the kernel's
``.nv.shared.<kernel>`` section, which includes the padding that aligns an ``extern __shared__ __align__(N)``
array (so it can exceed the sum of the declared variables).
"""
from __future__ import annotations

import struct

from ..errors import CompileError

__all__ = ["kernel_resources"]

_EIATTR_REGCOUNT = 0x2F


def _sections(cubin: bytes):
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise CompileError("not a 64-bit ELF cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + k * shentsize) for k in range(shnum)]
    strtab = headers[shstrndx]
    names = cubin[strtab[4]:strtab[4] + strtab[5]]
    out = {}
    for h in headers:
        out[names[h[0]:names.index(b"\0", h[0])].decode()] = h
    return out


def _symbols(cubin: bytes, secs) -> list[str]:
    sym, strings = secs[".symtab"], secs[".strtab"]
    table = cubin[strings[4]:strings[4] + strings[5]]
    names = []
    for off in range(sym[4], sym[4] + sym[5], 24):
        name_off, = struct.unpack_from("<I", cubin, off)
        names.append(table[name_off:table.index(b"\0", name_off)].decode())
    return names


def kernel_resources(cubin: bytes) -> dict[str, dict[str, int]]:
    """``{kernel: {"registers": n, "static_shared_bytes": m}}`` for every kernel in the cubin."""
    secs = _sections(cubin)
    symbols = _symbols(cubin, secs)
    out = {name[6:]: {"registers": 0, "static_shared_bytes": 0} for name in secs if name.startswith(".text.")}
    info = secs.get(".nv.info")
    if info is not None:
        data = cubin[info[4]:info[4] + info[5]]
        i = 0
        while i + 4 <= len(data):
            fmt, attr = data[i], data[i + 1]
            if fmt != 4:               # fixed-size entry: value in the 2 bytes after the header
                i += 4
                continue
            size, = struct.unpack_from("<H", data, i + 2)
            if attr == _EIATTR_REGCOUNT and size == 8:
                sym, count = struct.unpack_from("<II", data, i + 4)
                if sym < len(symbols) and symbols[sym] in out:
                    out[symbols[sym]]["registers"] = count
            i += 4 + size
    for name, h in secs.items():
        if name.startswith(".nv.shared.") and name[11:] in out:
            out[name[11:]]["static_shared_bytes"] = h[5]
    return out
