"""The address spaces of a run (PTX ISA #state-spaces, #generic-addressing) and a CTA's loads, stores and atomics.

Generic addresses: global buffers (each kernel argument array, tensor-map image and ``.global`` / ``.const``
variable) from ``GLOBAL_BASE``; a thread's local memory at ``LOCAL_WINDOW``; the kernel parameters at
``PARAM_WINDOW``; shared memory at ``GENERIC_SHARED_WINDOW``. A 32-bit shared::cta address below ``CLUSTER_WINDOW``
is the executing CTA's; ``mapa`` of address ``a`` to CTA ``r`` of the cluster is ``(r + 1) * CLUSTER_WINDOW + a``
(the shared::cluster window). Every access is bounds-checked: outside a buffer is an EmulationError naming the
nearest one (what compute-sanitizer's memcheck reports on the GPU).
"""
from __future__ import annotations

import bisect
from typing import Callable

import numpy as np

from ..errors import EmulationError
from .ctabase import CtaBase
from ..sim.executors.bulk import CLUSTER_WINDOW
from .stream import GENERIC_SHARED_WINDOW
from .numeric import binary, minmax

__all__ = ["GlobalMemory", "Buffer", "MemoryMixin", "GLOBAL_BASE", "LOCAL_WINDOW", "PARAM_WINDOW", "WINDOW_BYTES",
           "CLUSTER_WINDOW", "GENERIC_SHARED_WINDOW", "TENSOR_MAP_MAGIC"]

GLOBAL_BASE = 0x7000_0000_0000
LOCAL_WINDOW = 0x7D00_0000_0000
PARAM_WINDOW = 0x7E00_0000_0000
WINDOW_BYTES = 1 << 32
_ALIGN = 1 << 12
#: The first bytes of the 128-byte image a ``TensorMapArg`` puts in memory (then the map's index).
TENSOR_MAP_MAGIC = b"PYCUTE-TMAP\0"


class Buffer:
    """A global allocation: its name (the argument or variable), address and bytes (a view, written in place)."""

    def __init__(self, name: str, address: int, data: np.ndarray):
        self.name, self.address, self.data = name, address, data
        self.view = data.data

    def __repr__(self) -> str:
        return f"{self.name} [{self.address:#x}, {self.address + self.data.size:#x})"


class GlobalMemory:
    """Global buffers at distinct addresses, one guard page apart."""

    def __init__(self) -> None:
        self.buffers: list[Buffer] = []
        self.starts: list[int] = []
        self.next = GLOBAL_BASE

    def add(self, name: str, data: np.ndarray) -> Buffer:
        buf = Buffer(name, self.next, data)
        self.buffers.append(buf)
        self.starts.append(buf.address)
        self.next += -(-max(data.size, 1) // _ALIGN) * _ALIGN + _ALIGN
        return buf

    def find(self, address: int, n: int, what: str = "access") -> tuple[Buffer, int]:
        k = bisect.bisect_right(self.starts, address) - 1
        if k >= 0:
            buf = self.buffers[k]
            off = address - buf.address
            if off + n <= buf.data.size:
                return buf, off
        near = self.buffers[k] if k >= 0 else (self.buffers[0] if self.buffers else None)
        raise EmulationError(f"global {what} of {n} B at {address:#x} is outside every buffer"
                             + (f" (nearest: {near})" if near is not None else ""))

    def read(self, address: int, n: int) -> int:
        buf, off = self.find(address, n, "load")
        return int.from_bytes(buf.view[off:off + n], "little")

    def write(self, address: int, n: int, value: int) -> None:
        buf, off = self.find(address, n, "store")
        buf.view[off:off + n] = (value & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


def _atomic(op: str, t: str, old: int, b: int, c: int | None, bits: int) -> int:
    mask = (1 << bits) - 1
    if t.startswith("f") or t.startswith("bf"):
        name = t[:-2] if t.endswith("x2") else t
        # atom / red .add.f32 round to nearest and flush subnormal inputs and results to zeros of their sign (PTX ISA
        # #parallel-synchronization-and-communication-instructions-atom; ptxas writes ATOMG.E.ADD.F32.FTZ.RN); the
        # f16 / bf16 / f64 additions keep subnormals
        fn = binary("add", name, ftz=name == "f32") if op == "add" else minmax(op, name)
        if t.endswith("x2"):
            half = bits // 2
            lo = fn(old & ((1 << half) - 1), b & ((1 << half) - 1))
            return lo | (fn(old >> half, b >> half) << half)
        return fn(old, b)
    sgn = t.startswith("s")

    def s(v: int) -> int:
        return (v ^ (1 << (bits - 1))) - (1 << (bits - 1)) if sgn else v
    table: dict[str, Callable[[], int]] = {"and": lambda: old & b, "or": lambda: old | b, "xor": lambda: old ^ b, "exch": lambda: b,
             "add": lambda: old + b, "cas": lambda: (b if c is None else c) if old == b else old,
             "inc": lambda: 0 if old >= b else old + 1, "dec": lambda: b if old == 0 or old > b else old - 1,
             "min": lambda: min(s(old), s(b)), "max": lambda: max(s(old), s(b))}
    return table[op]() & mask


class MemoryMixin(CtaBase):
    """Loads, stores and atomics of a CTA's threads (mixed into ``scheduler.Cta``)."""

    def _resolve(self, th, space: str, addr: int, n: int):
        """``(kind, target, offset)``: kind "smem" with the CTA, "global", "local" or "param"."""
        if space == "generic":
            if GENERIC_SHARED_WINDOW <= addr < GENERIC_SHARED_WINDOW + 17 * CLUSTER_WINDOW:
                space, addr = "cluster", addr - GENERIC_SHARED_WINDOW
            elif LOCAL_WINDOW <= addr < LOCAL_WINDOW + WINDOW_BYTES:
                space, addr = "local", addr - LOCAL_WINDOW
            elif PARAM_WINDOW <= addr < PARAM_WINDOW + WINDOW_BYTES:
                space, addr = "param", addr - PARAM_WINDOW
            else:
                space = "global"
        if space in ("global", "const"):
            return "global", None, addr
        if space in ("shared", "cluster"):
            cta, off = self.shared_target(addr & 0xFFFF_FFFF, space == "cluster")
            if off < 0 or off + n > cta.smem.size:
                raise EmulationError(f"shared access of {n} B at {addr:#x} is outside CTA {cta.rank}'s "
                                     f"{cta.smem.size} B of shared memory")
            return "smem", cta, off
        if space == "local":
            if addr < 0 or addr + n > len(th.local):
                raise EmulationError(f"local access of {n} B at {addr:#x} is outside the {len(th.local)} B the "
                                     f"entry declares")
            return "local", th.local, addr
        if addr < 0 or addr + n > len(self.world.params):
            raise EmulationError(f"parameter access of {n} B at {addr:#x} is outside the {len(self.world.params)} "
                                 f"B of parameters")
        return "param", self.world.params, addr

    def shared_target(self, addr: int, cluster: bool):
        """The CTA and byte offset a shared::cta (or, with ``cluster``, shared::cluster) address names."""
        if cluster and addr >= CLUSTER_WINDOW:
            rank = addr // CLUSTER_WINDOW - 1
            if rank >= len(self.cluster.ctas):
                raise EmulationError(f"shared::cluster address {addr:#x} names CTA {rank}; the cluster has "
                                     f"{len(self.cluster.ctas)}")
            return self.cluster.ctas[rank], addr % CLUSTER_WINDOW
        return self, addr

    def _flag(self, kind: str, target, off: int):
        """The key of a location strong accesses synchronise through (shared bytes of a CTA, or global ones)."""
        return ("smem", target.rank, off) if kind == "smem" else ("global", off)

    def _release(self, th, key) -> None:
        flags = self.cluster.flags
        flags[key] = th.vc.copy() if key not in flags else np.maximum(flags[key], th.vc)
        th.tick()

    def ld(self, th, space: str, addr: int, n: int, strong: bool = False) -> int:
        """A load; ``strong`` (``.volatile`` / ``.relaxed`` / ``.acquire``) ones are not race-checked and acquire
        what strong stores and atomics to the same address released (PTX ISA #memory-consistency-model: morally
        strong operations do not race)."""
        kind, target, off = self._resolve(th, space, addr, n)
        if strong and kind in ("smem", "global"):
            th.acquire(self.cluster.flags.get(self._flag(kind, target, off)))
        if kind == "smem":
            if not strong:
                target.shadow.read(th, off, n, self.world.check_unwritten)
            return int.from_bytes(target.smem_view[off:off + n], "little")
        if kind == "global":
            return self.world.gmem.read(off, n)
        return int.from_bytes(target[off:off + n], "little")

    def ldv(self, th, space: str, addr: int, n: int, count: int, strong: bool = False) -> list[int]:
        whole = self.ld(th, space, addr, n * count, strong)
        return [(whole >> (8 * n * k)) & ((1 << (8 * n)) - 1) for k in range(count)]

    def st(self, th, space: str, addr: int, n: int, value: int, strong: bool = False) -> None:
        """A store; ``strong`` ones (``.volatile`` / ``.relaxed`` / ``.release``) release the thread's accesses
        so far to strong loads of the same address, and are not race-checked."""
        kind, target, off = self._resolve(th, space, addr, n)
        data = (value & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
        if strong and kind in ("smem", "global"):
            self._release(th, self._flag(kind, target, off))
        if kind == "smem":
            if not strong:
                target.shadow.write(th, off, n)
            target.smem_view[off:off + n] = data
        elif kind == "global":
            self.world.gmem.write(off, n, value)
        elif kind == "param":
            raise EmulationError("a store to kernel parameters (they are read-only)")
        else:
            target[off:off + n] = data

    def stv(self, th, space: str, addr: int, n: int, values: tuple, strong: bool = False) -> None:
        whole = 0
        for k, v in enumerate(values):
            whole |= (v & ((1 << (8 * n)) - 1)) << (8 * n * k)
        self.st(th, space, addr, n * len(values), whole, strong)

    def atom(self, th, space: str, op: str, t: str, addr: int, b: int, c: int | None = None) -> int:
        """An atomic read-modify-write: one at a time, so atomics never race; each acquires and releases through
        its address like a strong load and store (not race-checked against plain accesses)."""
        bits = int(t.lstrip("subfx").split("x")[0]) if not t.startswith("bf") else 16
        bits *= 2 if t.endswith("x2") else 1
        n = bits // 8
        kind, target, off = self._resolve(th, space, addr, n)
        if kind in ("smem", "global"):
            key = self._flag(kind, target, off)
            th.acquire(self.cluster.flags.get(key))
            self._release(th, key)
        if kind == "global":
            old = self.world.gmem.read(off, n)
            self.world.gmem.write(off, n, _atomic(op, t, old, b, c, bits))
            return old
        mem = target.smem_view if kind == "smem" else target
        old = int.from_bytes(mem[off:off + n], "little")
        mem[off:off + n] = _atomic(op, t, old, b, c, bits).to_bytes(n, "little")
        return old

    def cvta(self, space: str, to: bool, addr: int) -> int:
        window = {"shared": GENERIC_SHARED_WINDOW, "cluster": GENERIC_SHARED_WINDOW, "local": LOCAL_WINDOW,
                  "param": PARAM_WINDOW}.get(space, 0)
        return addr - window if to else addr + window

    def isspacep(self, space: str, addr: int) -> bool:
        shared = GENERIC_SHARED_WINDOW <= addr < GENERIC_SHARED_WINDOW + 17 * CLUSTER_WINDOW
        local = LOCAL_WINDOW <= addr < LOCAL_WINDOW + WINDOW_BYTES
        param = PARAM_WINDOW <= addr < PARAM_WINDOW + WINDOW_BYTES
        if space in ("shared", "cluster"):
            return shared and (space == "cluster" or addr - GENERIC_SHARED_WINDOW < CLUSTER_WINDOW)
        return {"local": local, "param": param}.get(space, not (shared or local or param))

    def mapa(self, th, addr: int, rank: int, generic: bool) -> int:
        if rank >= len(self.cluster.ctas):
            raise EmulationError(f"mapa to CTA {rank}: the cluster has {len(self.cluster.ctas)} CTAs")
        local = addr - GENERIC_SHARED_WINDOW if generic else addr
        _, off = self.shared_target(local & 0xFFFF_FFFF, True)
        out = (rank + 1) * CLUSTER_WINDOW + off
        return out + GENERIC_SHARED_WINDOW if generic else out

    def getctarank(self, th, addr: int, generic: bool) -> int:
        local = addr - GENERIC_SHARED_WINDOW if generic else addr
        return self.shared_target(local & 0xFFFF_FFFF, True)[0].rank

