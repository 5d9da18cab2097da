"""TMA plans in the emulator against the two layouts alone: a load puts array element ``origin + c`` (0 or the NaN
fill out of bounds; rounded to tf32 through a TFLOAT32 map) at the tile's element ``c`` in every
receiving CTA; a store writes the in-bounds ones back and nothing else; the bytes each CTA's mbarrier receives
equal the plan's ``expect_tx``. The origins tried: a tile-index plan's first, last and past-the-end tiles; an
element-origin plan's run-time origins at zero, unaligned, negative, near and past the array's end (those its
preconditions allow)."""
from __future__ import annotations

import struct

import attrs
import numpy as np

from ..arch.sm90.tma import NAN_FILL_UNIT, OOB_FILL_NAN, TF32_DATA_TYPES, TF32_LOAD_NAN
from ..atoms.tma import tma_atom
from ..dtypes import BF16_SHIFT, TF32_MASK

from ..copy.tma.plan import TmaPlan
from ..errors import EmulationError
from ..int_tuple import idx2crd, product
from ..layout import Layout
from .emulator import Sm90Emulator

__all__ = ["verify_tma", "element_bytes"]


def _tile_indices(plan: TmaPlan) -> list[tuple[int, ...]]:
    """The first tile, the last (partial where the array is not a multiple of the tile) and one past the end, each
    index kept within the plan's bounds on it (a mode merged into the next one's dimension, a store before a
    row's partial 16-byte unit)."""
    bound = {p.name: p.bound for p in plan.preconditions if p.kind == "at_most"}
    last = tuple(-(-n // t) - 1 for n, t in zip(plan.array_extents, plan.tile_shape))
    keep = lambda k, v: max(0, min(v, bound.get(f"t{k}", v)))        # noqa: E731
    out = [tuple(0 for _ in last), tuple(keep(k, v) for k, v in enumerate(last)),
           tuple(keep(k, v + 1) for k, v in enumerate(last))]
    return list(dict.fromkeys(out))


def _origin_values(plan: TmaPlan) -> list[dict[str, int]]:
    """Run-time origins to try, each allowed by the plan's preconditions: zero, unaligned (3 past a multiple),
    negative (loads), the tile hanging over the array's end, and wholly past it."""
    runtime = [o for o in plan.origin if o.name is not None]
    if not runtime:
        return [{}]
    rules = {str(o.name): [p for p in plan.preconditions if p.name == o.name] for o in runtime}

    def legal(name: str, v: int) -> int:
        for p in sorted(rules[name], key=lambda p: p.kind != "at_most"):
            if p.kind == "multiple":
                v -= v % p.bound
            elif p.kind == "at_least" and v < p.bound:
                v = p.bound
            elif p.kind == "at_most" and v > p.bound:
                v = p.bound
        return v

    def pick(o, kind: str) -> int:
        extent = plan.array_extents[o.mode] * o.unit
        tile = plan.tile_shape[o.mode] * o.unit
        return legal(o.name, {"zero": 0, "unaligned": 3 * o.unit, "negative": -(tile // 2) - 3 * o.unit,
                              "end": extent - tile // 2, "past": extent + o.step}[kind])

    return [{str(o.name): pick(o, kind) for o in runtime} for kind in ("zero", "unaligned", "negative", "end", "past")]


def _ctas(plan: TmaPlan) -> int:
    """CTAs of the cluster the plan is emulated in."""
    return plan.multicast.spec.size if plan.multicast else 2 if plan.atom.pair else 1


def _barrier(plan: TmaPlan, cta: int) -> int:
    """The CTA whose mbarrier counts the bytes landing in ``cta`` (a pair's even CTA, PTX ISA .cta_group::2)."""
    return cta & ~1 if plan.atom.pair else cta


def _issuers(plan: TmaPlan) -> list[tuple[int, int]]:
    """``(rank the stream is issued as, CTA that issues it)``: every CTA of a multicast's masks, both CTAs of a
    pair (each its own tile), or CTA 0."""
    if plan.multicast is not None:
        return [(r, r) for r in plan.multicast.spec.participants()]
    return [(0, c) for c in range(_ctas(plan))]


def _issue_all(plan: TmaPlan, emu: Sm90Emulator, gmem: np.ndarray, tile: tuple) -> tuple[list[int], set[int]]:
    """Every CTA's boxes of tile ``tile``; the bytes each CTA's mbarrier received and the CTAs written to."""
    received = [0] * _ctas(plan)
    written: set[int] = set()
    for rank, cta in _issuers(plan):
        for issue in plan.stream(0, *tile, cta=rank):
            if plan.direction == "store":
                emu.tma_store(plan.tensor_map, gmem, issue.coords, issue.smem, reduce=plan.reduce)
                continue
            n = emu.tma_load(plan.tensor_map, gmem, issue.coords, issue.smem, cta=cta, mask=issue.mask)
            targets = [cta] if issue.mask is None else [c for c in range(16) if issue.mask >> c & 1]
            for t in targets:
                received[_barrier(plan, t)] += n
            written.update(targets)
    return received, written


def _expected(plan: TmaPlan, coords: list, offsets: np.ndarray, gmem: np.ndarray, smem: np.ndarray,
              origin: list, elem: int) -> tuple[dict, np.ndarray]:
    """What the layouts say: the shared bytes per tile element after a load, the array after a store (an array
    mode is read at its 1-D coordinate, so that a hierarchical mode is its own layout)."""
    modes = [Layout(shape, stride) for shape, stride in plan.array_modes]
    extents = plan.array_extents
    loaded, stored = {}, gmem.copy()
    fill = NAN_FILL_UNIT * (elem // 2) if plan.tensor_map.oob_fill == OOB_FILL_NAN else bytes(elem)
    for c, s in zip(coords, offsets):
        g = [o + c[k] for k, o in enumerate(origin)]
        inside = all(0 <= x < n for x, n in zip(g, extents))
        goff = sum(int(m(x)) for m, x in zip(modes, g)) * elem if inside else 0
        loaded[int(s)] = _convert_one(bytes(gmem[goff:goff + elem]), plan.tensor_map.data_type) if inside else fill
        if inside and plan.reduce is None:
            stored[goff:goff + elem] = smem[s:s + elem]
        elif inside:
            stored[goff:goff + elem] = _reduce_one(plan, stored[goff:goff + elem], smem[s:s + elem])
    return loaded, stored


def element_bytes(rng: np.random.Generator, nbytes: int, dtype: str, finite: bool) -> np.ndarray:
    """``nbytes`` random bytes; with ``finite``, floating-point elements are finite values in [-4, 4) (a
    reduction's arithmetic on NaN payloads and infinities is not what is being checked)."""
    if not finite or dtype not in ("f32", "f16", "bf16", "f64"):
        return rng.integers(0, 256, nbytes, dtype=np.uint8)
    values = rng.uniform(-4, 4, nbytes // {"f32": 4, "f16": 2, "bf16": 2, "f64": 8}[dtype])
    if dtype == "bf16":
        return (values.astype(np.float32).view(np.uint32) >> BF16_SHIFT).astype(np.uint16).view(np.uint8)
    return values.astype({"f32": np.float32, "f16": np.float16, "f64": np.float64}[dtype]).view(np.uint8)


def _convert_one(value: bytes, data_type: int) -> bytes:
    """One in-bounds element as a converting map loads it, from its bits as a Python integer: TF32 rounds to
    nearest even at the 13th bit (a tie keeps the even tf32), leaves infinities alone and loads every NaN as the
    one NaN the H200 writes; the FTZ forms change nothing (docs/tma.md)."""
    if data_type not in TF32_DATA_TYPES:
        return value
    bits = struct.unpack("<I", value)[0]
    exponent, mantissa = bits >> 23 & 0xFF, bits & 0x7FFFFF
    if exponent == 0xFF:
        return struct.pack("<I", TF32_LOAD_NAN if mantissa else bits)
    shift = (0xFFFFFFFF ^ TF32_MASK).bit_length()
    kept, dropped = bits >> shift, bits & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    kept += dropped > half or (dropped == half and kept & 1)
    return struct.pack("<I", kept << shift)


def _reduce_one(plan: TmaPlan, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """One element's reduction from its bytes, as Python integers or floats (independent of the executor's
    vectorised arithmetic)."""
    dtype = plan.gmem.dtype.name
    if dtype == "bf16":
        a, b = (struct.unpack("<f", bytes(2) + bytes(x))[0] for x in (old, new))
        r = {"add": a + b, "min": min(a, b), "max": max(a, b)}[str(plan.reduce)]
        bits = struct.unpack("<I", struct.pack("<f", r))[0]
        rounded = (bits + (1 << (BF16_SHIFT - 1)) - 1 + ((bits >> BF16_SHIFT) & 1)) >> BF16_SHIFT
        return np.frombuffer(struct.pack("<H", rounded), np.uint8)
    fmt = {"u32": "<I", "i32": "<i", "u64": "<Q", "i64": "<q", "f32": "<f", "f16": "<e"}[dtype]
    a, b = struct.unpack(fmt, bytes(old))[0], struct.unpack(fmt, bytes(new))[0]
    bits = 8 * struct.calcsize(fmt)
    r = {"add": lambda: a + b, "min": lambda: min(a, b), "max": lambda: max(a, b), "and": lambda: a & b,
         "or": lambda: a | b, "xor": lambda: a ^ b, "inc": lambda: 0 if a >= b else a + 1,
         "dec": lambda: b if a == 0 or a > b else a - 1}[str(plan.reduce)]()
    if fmt[1] in "IQ":
        r %= 1 << bits
    elif fmt[1] in "iq":
        r = (r + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    elif fmt[1] in "fe":
        return np.frombuffer(np.array([r], dtype=fmt).tobytes(), np.uint8)
    return np.frombuffer(struct.pack(fmt, r), np.uint8)


def verify_tma(plan: TmaPlan, seed: int = 0) -> None:
    """Emulate a TMA plan for its first, last and past-the-end tiles, or its element origins (every CTA of a
    multicast; the first and last value of each run-time index) and compare with the layouts alone; raises
    EmulationError at the first difference."""
    if not isinstance(plan, TmaPlan):
        raise TypeError(f"verify_tma: expected a TmaPlan (make_tma_copy), got {type(plan).__name__}")
    if plan.stages:
        for values in ({s.name: 0 for s in plan.stages}, {s.name: s.extent - 1 for s in plan.stages}):
            verify_tma(plan.at(**values), seed)
        return
    if any(o.name is not None for o in plan.origin):
        for values in _origin_values(plan):
            verify_tma(plan.at(**values), seed)
        return
    if plan.direction == "prefetch":            # a prefetch names the boxes of the load it was made from
        atom = tma_atom("load", plan.atom.rank)
        plan = attrs.evolve(plan, direction="load", atom=atom,
                            instructions=tuple(attrs.evolve(i, ptx=atom.ptx) for i in plan.instructions))
    rng = np.random.default_rng(seed)
    elem, nbytes = plan.elem_bytes, plan.array_bytes
    coords = [tuple(idx2crd(i, plan.tile_shape)) for i in range(product(plan.tile_shape))]
    offsets = np.array([plan.smem.element_offset(*c) for c in coords], dtype=np.int64) * elem
    smem_bytes = -(-(int(offsets.max()) + elem) // 1024) * 1024
    ctas = _ctas(plan)
    for t in (_tile_indices(plan) if not plan.origin else [()]):
        emu = Sm90Emulator(smem_bytes=smem_bytes, ctas=ctas)
        finite = plan.reduce is not None
        gmem, smem = (element_bytes(rng, n, plan.gmem.dtype.name, finite) for n in (nbytes, smem_bytes))
        emu.write_smem(0, smem)
        loaded, stored = _expected(plan, coords, offsets, gmem, smem, list(plan.origin_elements(*t)), elem)
        received, written = _issue_all(plan, emu, gmem, t)
        where = f"tile {t}" if not plan.origin else f"origin {tuple(o.value for o in plan.origin)}"
        if plan.direction == "store":
            if not np.array_equal(gmem, stored):
                k = int(np.argwhere(gmem != stored)[0][0])
                raise EmulationError(f"{where}: array byte {k} is {gmem[k]:#04x} after the store, the layouts "
                                     f"say {stored[k]:#04x}")
            continue
        for cta in range(ctas):
            want_tx = plan.expect_tx if cta in written and _barrier(plan, cta) == cta else 0
            if received[cta] != want_tx:
                raise EmulationError(f"{where}: CTA {cta}'s mbarrier receives {received[cta]} B, the plan expects "
                                     f"{want_tx} B")
            image = emu.ctas[cta].smem
            if cta not in written:
                before = smem if cta == 0 else np.zeros_like(smem)
                if not np.array_equal(image, before):
                    raise EmulationError(f"tile {t}: CTA {cta} takes no part, yet its shared memory changed")
                continue
            for s, want in loaded.items():
                if bytes(image[s:s + elem]) != want:
                    raise EmulationError(f"{where}: CTA {cta}'s shared byte {s} holds "
                                         f"{bytes(image[s:s + elem]).hex()}, the array says {want.hex()}")
