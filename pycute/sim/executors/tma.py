"""The TMA executor: tile-mode ``cp.async.bulk.tensor`` loads and stores, bit for bit (PTX ISA #tensor-tiled-mode):
the box is written to (read from) shared memory densely, dimension 0 fastest, through the mode's swizzle of the
absolute byte address (a swizzled box whose rows are narrower than the swizzle's keeps one pattern row per box row); out-of-bounds elements load as zeros and are not stored, except that a store writes a row's
16-byte units whole; a load delivers the whole box's bytes to its mbarrier, out-of-bounds parts included
(docs/tma.md)."""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from ...arch.sm80.cache import CACHE_HINT, policy_of_token
from ...errors import EmulationError
from ...arch.sm90.tma import MAX_MULTICAST, NAN_FILL_UNIT, OOB_FILL_NAN
from ...arch.sm90.tma_im2col import OFFSET_BITS
from ...atoms.tma import TmaIssue
from ...copy.tma.plan import DTYPE_BYTES
from ...dtypes import BF16_SHIFT
from ..machine import Machine

__all__ = ["TmaExecutor", "decode"]



def _box_addresses(params: Any, coords: tuple, smem: int, store: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per box element (dim 0 fastest): its global byte offset, whether it is in bounds, and its (swizzled)
    shared-memory byte address. A store writes every 16-byte unit of a row it touches whole (measured on the H200,
    docs/tma.md), so for stores dimension 0 reaches the next 16-byte boundary."""
    elem = DTYPE_BYTES[params.dtype]
    box, dims = params.box, list(params.global_dims)
    if store:
        dims[0] = -(-dims[0] * elem // 16) * 16 // elem
    strides = (elem,) + tuple(params.global_strides)
    if len(coords) != len(box):
        raise EmulationError(f"TMA: {len(coords)} coordinates for a {len(box)}-dimensional tensor map")
    if smem % 16:
        raise EmulationError(f"TMA: the box's shared address {smem:#x} is not 16-byte aligned")
    idx = np.indices(tuple(reversed(box))).reshape(len(box), -1)[::-1]          # row k: box index of dim k
    g = idx + np.array(coords, dtype=np.int64)[:, None]
    inside = np.all((g >= 0) & (g < np.array(dims, dtype=np.int64)[:, None]), axis=0)
    offset = (g * np.array(strides, dtype=np.int64)[:, None]).sum(axis=0)
    flat = np.arange(idx.shape[1], dtype=np.int64)
    pitch = params.swizzle.row_pitch(box[0] * elem)          # a narrow swizzled row still takes a pattern row
    linear = smem + flat // box[0] * pitch + flat % box[0] * elem
    sw = params.swizzle.byte_swizzle
    return offset, inside, (sw(linear) if sw is not None else linear)


_NUMPY = {2: "<u4", 3: "<i4", 4: "<u8", 5: "<i8", 7: "<f4", 6: "<f2"}       # CUtensorMapDataType -> numpy


def _bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << BF16_SHIFT).view(np.float32).astype(np.float64)


def _f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to nearest even, through float32 (exact enough: 24 bits >= 2 x 8 + 2, no double-rounding error)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    half = (1 << (BF16_SHIFT - 1)) - 1
    return ((bits + half + ((bits >> BF16_SHIFT) & 1)) >> BF16_SHIFT).astype(np.uint16)


def _combine(op: str, data_type: int, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``old op new`` elementwise as PTX's reductions define it (bytes in, bytes out)."""
    if data_type == 9:                                        # bf16: through float64, rounded once
        a, b = _bf16_to_f64(old.view("<u2")), _bf16_to_f64(new.view("<u2"))
        r = {"add": a + b, "min": np.minimum(a, b), "max": np.maximum(a, b)}[op]
        return _f64_to_bf16(r).view(np.uint8)
    a, b = old.view(_NUMPY[data_type]), new.view(_NUMPY[data_type])
    if a.dtype.kind == "f":
        x, y = a.astype(np.float64), b.astype(np.float64)
        r = {"add": x + y, "min": np.minimum(x, y), "max": np.maximum(x, y)}[op].astype(a.dtype)
        return r.view(np.uint8)
    with np.errstate(over="ignore"):
        r = {"add": lambda: a + b, "min": lambda: np.minimum(a, b), "max": lambda: np.maximum(a, b),
             "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b,
             "inc": lambda: np.where(a >= b, 0, a + 1).astype(a.dtype),
             "dec": lambda: np.where((a == 0) | (a > b), b, a - 1).astype(a.dtype)}[op]()
    return r.view(np.uint8)


class TmaExecutor(Machine):
    """TMA loads and stores between a global byte array and a CTA's shared memory."""

    def _bytes(self, params: Any, addresses: np.ndarray, cta: int) -> np.ndarray:
        c = self.ctas[self._cta(cta)]
        elem = DTYPE_BYTES[params.dtype]
        rel = addresses[:, None] - c.smem_base + np.arange(elem)[None, :]
        if rel.min() < 0 or rel.max() >= c.smem.size:
            raise EmulationError(f"TMA: the box reaches shared memory [{int(addresses.min()):#x}, "
                                 f"{int(addresses.max()) + elem:#x}), outside [{c.smem_base:#x}, "
                                 f"{c.smem_base + c.smem.size:#x})")
        return rel

    def tma_load(self, params: Any, gmem: np.ndarray, coords: tuple, smem: int, cta: int = 0,
                 mask: int | None = None) -> int:
        """One box from ``gmem`` (the array's bytes from its base) into shared memory at ``smem`` of ``cta`` (with
        ``mask``, of every CTA whose bit is set: ``.multicast::cluster``); returns the bytes it delivers to each
        receiving CTA's mbarrier (the whole box)."""
        offset, inside, addresses = _box_addresses(params, coords, smem)
        elem = DTYPE_BYTES[params.dtype]
        rel = self._bytes(params, addresses, cta)
        data = np.zeros((offset.size, elem), dtype=np.uint8)
        if params.oob_fill == OOB_FILL_NAN:
            data[:] = np.frombuffer(NAN_FILL_UNIT * (elem // 2), dtype=np.uint8)
        src = offset[inside][:, None] + np.arange(elem)[None, :]
        if src.size and src.max() >= gmem.size:
            raise EmulationError(f"TMA: an in-bounds element at byte {int(src.max())} lies past the {gmem.size}-byte "
                                 f"array the tensor map describes")
        data[inside] = gmem[src]
        targets = [cta] if mask is None else [c for c in range(16) if mask >> c & 1]
        if mask is not None and (not targets or max(targets) >= len(self.ctas)):
            raise EmulationError(f"TMA multicast mask {mask:#06x} names CTAs the cluster of {len(self.ctas)} lacks")
        for t in targets:
            self.ctas[self._cta(t)].smem[rel] = data
        return int(offset.size * elem)

    def tma_store(self, params: Any, gmem: np.ndarray, coords: tuple, smem: int, cta: int = 0,
                  reduce: str | None = None) -> None:
        """One box from shared memory at ``smem`` into ``gmem`` (in place); out-of-bounds elements are dropped.
        With ``reduce`` each element is combined with the array's (``add``, ``min``, ...)."""
        if any(c < 0 for c in coords):
            raise EmulationError(f"TMA store at coordinates {coords}: a store's coordinates are non-negative (PTX "
                                 f"#data-movement-and-conversion-instructions-tensor-copy-restrictions)")
        offset, inside, addresses = _box_addresses(params, coords, smem, store=True)
        elem = DTYPE_BYTES[params.dtype]
        rel = self._bytes(params, addresses, cta)
        data = self.ctas[self._cta(cta)].smem[rel]
        dst = offset[inside][:, None] + np.arange(elem)[None, :]
        if dst.size and dst.max() >= gmem.size:
            raise EmulationError(f"TMA: an in-bounds element at byte {int(dst.max())} lies past the {gmem.size}-byte "
                                 f"array the tensor map describes")
        if reduce is not None:
            gmem[dst] = _combine(reduce, params.data_type, gmem[dst].reshape(-1).copy(),
                                 np.ascontiguousarray(data[inside]).reshape(-1)).reshape(dst.shape)
            return
        gmem[dst] = data[inside]


def decode(op: str, args: list, value: Callable[[str], int]) -> TmaIssue:
    """A compiled ``cp.async.bulk.tensor`` as the issue record a plan streams: a load's ``[smem], [map, {c0, ...}],
    [mbar]{, {im2col offsets}}{, ctaMask}{, policy}``, a store's ``[map, {c0, ...}], [smem]{, policy}`` or a
    prefetch's ``[map, {c0, ...}]{, policy}`` (``value`` reads an operand; a policy is read back as the
    ``CachePolicy`` createpolicy made in the interpretation)."""
    if ".prefetch." in op:
        tensor, smem, rest = args[0], "0", args[1:]
    else:
        store = ".global.shared::cta" in op
        tensor, smem = (args[0], args[1]) if store else (args[1], args[0])
        rest = args[2:] if store else args[3:]
    m = re.fullmatch(r"\[\s*[^,\s]+\s*,\s*\{([^}]*)\}\s*\]", tensor)
    if m is None:
        raise EmulationError(f"{op}: tensor operand {tensor!r} is not [map, {{coordinates}}]")
    coords = tuple((value(c.strip()) & 0xFFFFFFFF) - ((value(c.strip()) & 0x80000000) << 1)
                   for c in m.group(1).split(","))
    im2col = None
    if ".im2col" in op:                           # {offsets} (the W modes: {wHalo, wOffset}), 16 bits each
        im2col = tuple(value(x.strip()) % 2 ** OFFSET_BITS for x in rest.pop(0).strip("{} ").split(","))
    mask = value(rest.pop(0)) % (1 << MAX_MULTICAST) if ".multicast::cluster" in op else None
    policy = policy_of_token(value(rest.pop(0))) if CACHE_HINT in op else None
    if rest:
        raise EmulationError(f"{op}: operands {rest} past the ones the form takes")
    return TmaIssue(op, coords, value(smem.strip("[] ")) & 0xFFFFFFFF, mask, policy, im2col)
