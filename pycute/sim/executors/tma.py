"""The TMA executor: tile-mode ``cp.async.bulk.tensor`` loads and stores, bit for bit (PTX ISA #tensor-tiled-mode):
the box is written to (read from) shared memory densely, dimension 0 fastest, through the mode's swizzle of the
absolute byte address (a swizzled box whose rows are narrower than the swizzle's keeps one pattern row per box
row); out-of-bounds elements load as zeros (or the NaN fill) and are not stored, except that a store writes a row's
16-byte units whole; a load delivers the whole box's bytes to its mbarrier, out-of-bounds parts included; a TFLOAT32
map rounds each loaded f32 to tf32 and an FTZ map changes nothing a load writes (measured on the H200, docs/tma.md).
A box starting off a 16-byte unit along dimension 0 is refused, as the H200 faults on it for every direction.

A tensor map is modelled as its fields (``TensorMap``: the encoded parameters and the global address), which
``tensormap.replace`` edits one at a time (PTX ISA #tensormap-instructions-tensormap-replace)."""
from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

import attrs
import numpy as np

from ...arch.sm80.cache import CACHE_HINT, policy_of_ptx, policy_of_token
from ...errors import EmulationError
from ...arch.sm90.tma import (DIM_LIMIT, GLOBAL_ALIGN, MAX_BOX, MAX_BOX_BYTES, MAX_MULTICAST, NAN_FILL_UNIT,
                              OOB_FILL_NAN, BOX_START_UNIT, STRIDE_ALIGN, STRIDE_LIMIT, TF32_DATA_TYPES, TF32_LOAD_NAN)
from ...arch.sm90.tma_im2col import OFFSET_BITS
from ...atoms.tma import TmaIssue
from ...copy.tma.plan import DTYPE_BYTES, TensorMapParams
from ...dtypes import BF16_SHIFT, TF32_MASK
from ..machine import Machine

__all__ = ["createpolicy_token", "TmaExecutor", "decode", "decode_replace", "decode_publish", "TensorMap", "TensorMapEdit",
           "TensorMapPublish", "replace_field", "convert_loaded"]


@attrs.frozen
class TensorMap:
    """A tensor map as fields: the parameters ``cuTensorMapEncodeTiled`` took and the global address, here a byte
    offset into the emulator's global array."""

    params: TensorMapParams
    address: int = 0


class TensorMapEdit(NamedTuple):
    """One ``tensormap.replace.tile.<field>``: the field, its ordinal (None for address-like fields), the new
    value and the shared (or global) address of the 128-byte map it edits."""

    field: str
    ordinal: int | None
    value: int
    map_address: int


class TensorMapPublish(NamedTuple):
    """``tensormap.cp_fenceproxy``: the map at shared address ``smem`` copied to global ``gmem`` and released to
    the tensormap proxy (``size`` bytes, 128)."""

    gmem: int
    smem: int
    size: int


def replace_field(tmap: TensorMap, field: str, ordinal: int | None, value: int) -> TensorMap:
    """The map after ``tensormap.replace.tile.<field>`` (PTX ISA #tensormap-instructions-tensormap-replace; the
    values in the units the driver's encoder takes: bytes for strides, elements for dims and boxes). A value the
    encoder would refuse is an EmulationError: the map would be invalid and TMA through it undefined."""
    p = tmap.params
    if field == "global_address":
        if value % GLOBAL_ALIGN:
            raise EmulationError(f"tensormap.replace: global_address {value:#x} is not {GLOBAL_ALIGN}-byte aligned")
        return attrs.evolve(tmap, address=value)
    if field not in ("global_dim", "global_stride", "box_dim"):
        raise EmulationError(f"tensormap.replace.{field} is not modelled (global_address, global_dim, global_stride "
                             f"and box_dim are)")
    if ordinal is None or not 0 <= ordinal < p.rank:
        raise EmulationError(f"tensormap.replace.{field}: ordinal {ordinal} outside the map's {p.rank} dimensions")
    if field == "global_dim":
        if not 1 <= value <= DIM_LIMIT:
            raise EmulationError(f"tensormap.replace: global_dim {value} outside [1, 2^32]")
        dims = list(p.global_dims)
        dims[ordinal] = value
        return attrs.evolve(tmap, params=attrs.evolve(p, global_dims=tuple(dims)))
    if field == "global_stride":
        if ordinal >= p.rank - 1:
            raise EmulationError(f"tensormap.replace.global_stride: ordinal {ordinal} names dimension {ordinal + 1} "
                                 f"of a {p.rank}-dimensional map")
        if value % STRIDE_ALIGN or not 0 <= value < STRIDE_LIMIT:
            raise EmulationError(f"tensormap.replace: global_stride {value} B is not a multiple of {STRIDE_ALIGN} "
                                 f"below 2^40")
        strides = list(p.global_strides)
        strides[ordinal] = value
        return attrs.evolve(tmap, params=attrs.evolve(p, global_strides=tuple(strides)))
    if not 1 <= value <= MAX_BOX:                                     # box_dim
        raise EmulationError(f"tensormap.replace: box_dim {value} outside [1, {MAX_BOX}]")
    box = list(p.box)
    box[ordinal] = value
    edited = attrs.evolve(p, box=tuple(box))
    if edited.box_bytes > MAX_BOX_BYTES:
        raise EmulationError(f"tensormap.replace: box_dim {value} makes the box {edited.box} {edited.box_bytes} B, "
                             f"over the {MAX_BOX_BYTES} B a box may have")
    return attrs.evolve(tmap, params=edited)


def convert_loaded(data: np.ndarray, data_type: int) -> np.ndarray:
    """What a load through a map of ``data_type`` writes for in-bounds elements ``data`` (``(n, 4)`` bytes), as the
    H200 does (docs/tma.md): TFLOAT32 types round to nearest even at 10 mantissa bits (the low 13 bits cleared;
    subnormals rounded alike, a carry may reach the exponent), keep infinities and turn every NaN into
    ``TF32_LOAD_NAN``; the FTZ forms flush nothing (a load through FLOAT32_FTZ copies the bytes)."""
    if data_type not in TF32_DATA_TYPES:
        return data
    bits = np.ascontiguousarray(data).view("<u4").reshape(-1).astype(np.uint64)
    low = 0xFFFFFFFF ^ TF32_MASK                          # the 13 bits tf32 drops
    rounded = (bits + (low >> 1) + ((bits >> low.bit_length()) & 1)) & TF32_MASK
    special = (bits & 0x7F800000) == 0x7F800000
    nan = special & ((bits & 0x007FFFFF) != 0)
    bits = np.where(nan, TF32_LOAD_NAN, np.where(special, bits, rounded))
    return bits.astype("<u4").view(np.uint8).reshape(data.shape)


def _box_addresses(params: Any, coords: tuple, smem: int, store: bool = False, address: int = 0
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
    offset = address + (g * np.array(strides, dtype=np.int64)[:, None]).sum(axis=0)
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


def _check_box_start(what: str, params: Any, coords: tuple) -> None:
    """A box starts on a 16-byte unit along dimension 0: the H200 raised an illegal-instruction exception for every
    direction otherwise (docs/tma.md)."""
    start = coords[0] * DTYPE_BYTES[params.dtype]
    if start % BOX_START_UNIT:
        raise EmulationError(f"TMA {what} at coordinates {coords}: the box starts {start} B along dimension 0, off "
                             f"a {BOX_START_UNIT}-byte unit; the H200 raises an illegal-instruction exception there "
                             f"(docs/tma.md)")


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
                 mask: int | None = None, address: int = 0) -> int:
        """One box from ``gmem`` (global bytes; the map's array starts ``address`` bytes in) into shared memory
        at ``smem`` of ``cta`` (with ``mask``, of every CTA whose bit is set: ``.multicast::cluster``); returns
        the bytes it delivers to each receiving CTA's mbarrier (the whole box)."""
        _check_box_start("load", params, coords)
        offset, inside, addresses = _box_addresses(params, coords, smem, address=address)
        elem = DTYPE_BYTES[params.dtype]
        rel = self._bytes(params, addresses, cta)
        data = np.zeros((offset.size, elem), dtype=np.uint8)
        if params.oob_fill == OOB_FILL_NAN:
            data[:] = np.frombuffer(NAN_FILL_UNIT * (elem // 2), dtype=np.uint8)
        src = offset[inside][:, None] + np.arange(elem)[None, :]
        if src.size and src.max() >= gmem.size:
            raise EmulationError(f"TMA: an in-bounds element at byte {int(src.max())} lies past the {gmem.size}-byte "
                                 f"array the tensor map describes")
        data[inside] = convert_loaded(gmem[src], params.data_type)
        targets = [cta] if mask is None else [c for c in range(16) if mask >> c & 1]
        if mask is not None and (not targets or max(targets) >= len(self.ctas)):
            raise EmulationError(f"TMA multicast mask {mask:#06x} names CTAs the cluster of {len(self.ctas)} lacks")
        for t in targets:
            self.ctas[self._cta(t)].smem[rel] = data
        return int(offset.size * elem)

    def tma_store(self, params: Any, gmem: np.ndarray, coords: tuple, smem: int, cta: int = 0,
                  reduce: str | None = None, address: int = 0) -> None:
        """One box from shared memory at ``smem`` into ``gmem`` (in place; the map's array starts ``address``
        bytes in); out-of-bounds elements are dropped. With ``reduce`` each element is combined with the array's
        (``add``, ``min``, ...)."""
        if any(c < 0 for c in coords):
            raise EmulationError(f"TMA store at coordinates {coords}: a store's coordinates are non-negative (PTX "
                                 f"#data-movement-and-conversion-instructions-tensor-copy-restrictions; the H200 "
                                 f"faulted on one, docs/tma.md)")
        _check_box_start("reduction" if reduce is not None else "store", params, coords)
        offset, inside, addresses = _box_addresses(params, coords, smem, store=True, address=address)
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


def _map_operand(operand: str, value: Callable[[str], int]) -> int:
    m = re.fullmatch(r"\[\s*([^\]+\s]+)\s*(?:\+\s*(-?\w+))?\s*\]", operand.strip())
    if m is None:
        raise EmulationError(f"tensormap operand {operand!r} is not [address] or [address+offset]")
    return value(m.group(1)) + (value(m.group(2)) if m.group(2) else 0)


def decode_replace(op: str, args: list, value: Callable[[str], int]) -> TensorMapEdit:
    """``tensormap.replace.tile.<field>.<space>.b1024.<type> [map], {ordinal,} value`` as its edit record."""
    parts = op.split(".")
    if len(parts) < 4 or parts[2] != "tile":
        raise EmulationError(f"{op}: only tile-mode tensormap.replace is modelled")
    field = parts[3]
    bits = 64 if parts[-1] == "b64" else 32
    mask = (1 << bits) - 1
    ordinal = value(args[1].strip()) if len(args) == 3 else None
    return TensorMapEdit(field, ordinal, value(args[-1].strip()) & mask, _map_operand(args[0], value))


def decode_publish(op: str, args: list, value: Callable[[str], int]) -> TensorMapPublish:
    """``tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.<scope>.sync.aligned [gmem],
    [smem], 128`` as its record."""
    return TensorMapPublish(_map_operand(args[0], value), _map_operand(args[1], value) & 0xFFFFFFFF,
                            value(args[2].strip()))


def createpolicy_token(op: str, args: list, value: Callable[[str], int]) -> int:
    """What ``createpolicy.fractional... dst, fraction`` leaves in ``dst`` in the PTX interpreter: the token of the
    policy (``CachePolicy.token``), read back by the decoders of the copies that take it. The fraction is a PTX
    float literal (``0f3F800000``) or a register holding its bits."""
    f = args[1].strip()
    bits = int(f[2:], 16) if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", f) else value(f)
    return policy_of_ptx(op, bits).token
