"""What the PTX interpreter needs of a checked build's ``printf`` (CUDA's device printf, ``vprintf`` in PTX): the
format strings NVRTC places in global memory, and the formatting of the arguments the caller packed into its local
buffer, so that a trap's message can be read on a machine without a GPU."""
from __future__ import annotations

import re

__all__ = ["string_symbols", "format_printf"]

#: A string NVRTC places in global memory for printf: ``.global .align 1 .b8 $str[N] = {b0, b1, ...};``
_STRING = re.compile(r"\.global\s+\.align\s+\d+\s+\.b8\s+(\$str\$?\d*)\[\d+\]\s*=\s*\{([\d,\s]*)\}")
#: Where this model places those strings (generic addresses, away from the shared window).
STRING_WINDOW = 0x7E00_0000_0000


def string_symbols(ptx: str) -> tuple[dict[str, int], dict[int, str]]:
    """``(address by symbol, text by address)`` of the module's printf strings."""
    strings = {name: bytes(int(b) for b in body.split(",") if b.strip()) for name, body in _STRING.findall(ptx)}
    where = {name: STRING_WINDOW + 4096 * k for k, name in enumerate(strings)}
    return where, {where[n]: b.split(b"\0")[0].decode(errors="replace") for n, b in strings.items()}


def format_printf(fmt: str, local: dict[int, int], address: int) -> str:
    """printf's ``fmt`` with its arguments read from the local buffer at ``address`` (each aligned to its size,
    as the PTX ABI packs them): ``%d %i %u %x %ld %lld %lu %llu %lx %llx %%``."""
    out, k, offset = [], 0, 0
    spec = re.compile(r"%(l{0,2})([diuxX%])")
    while True:
        m = spec.search(fmt, k)
        if m is None:
            out.append(fmt[k:])
            return "".join(out)
        out.append(fmt[k:m.start()])
        k = m.end()
        if m.group(2) == "%":
            out.append("%")
            continue
        size = 8 if m.group(1) else 4
        offset = -(-offset // size) * size
        v = sum(local.get(address + offset + b, 0) << (8 * b) for b in range(size))
        offset += size
        if m.group(2) in "di" and v >> (8 * size - 1):
            v -= 1 << (8 * size)
        out.append(format(v, "x" if m.group(2) in "xX" else "d"))
