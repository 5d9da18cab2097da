"""Register <-> shared plans in the emulator against the two layouts alone: a store leaves every tile element the
fragment holds equal to its (converted) value, at the address the tile's layout and swizzle give it, and no other
byte changed; a load gives every register value the element its coordinate names. The register images follow the
plan's instructions (which values each register packs, the cvt's upper / lower halves); the expectation does not
(each element converted alone, placed by the layouts)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..copy.smem_ldst.forms import Move
from ..copy.smem_ldst.plan import SmemCopyPlan
from ..errors import EmulationError
from ..tensor.tile import mode_extents, whole_array_modes
from ..tensor.values import smem_bytes_needed, smem_element_offsets
from .convert import round_f32
from .emulator import Sm90Emulator

if TYPE_CHECKING:
    from ..copy.smem_ldst.epilogue import EpiloguePlan

__all__ = ["verify_smem_copy", "verify_epilogue", "fragment_bits", "store_registers", "run_smem_copy",
           "run_epilogue", "expected_tile", "expected_array", "SPECIAL_F32"]

_MARKER = 0xA5
#: f32 patterns every conversion check includes: zeros, infinities, NaNs (quiet and signalling, both signs), the
#: largest finite, subnormals, ties at each target's rounding point, values past each target's largest finite.
SPECIAL_F32 = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                        0x7F7FFFFF, 0x00000001, 0x807FFFFF, 0x3F808000, 0x3F818000, 0x477FF000, 0x43E80000,
                        0x43F00000, 0xC3F80000, 0x47600000, 0x47700000, 0x3F7FFFFF, 0x33000001], dtype=np.uint32)


def fragment_bits(plan: SmemCopyPlan, seed: int = 0) -> np.ndarray:
    """``(threads, values)`` random element bit patterns of the fragment's type (f32 with a conversion: spread
    over the target's range, with the special values)."""
    rng = np.random.default_rng(seed)
    shape = (plan.threads, plan.values)
    bits = plan.fragment.dtype.bits
    if plan.conversion is None:
        return rng.integers(0, 1 << bits, shape, dtype=np.uint64).astype(np.uint32)
    scale = {8: 2.0 ** rng.integers(-12, 10, shape), 16: 2.0 ** rng.integers(-30, 30, shape)}[plan.conversion.bits]
    out = (rng.standard_normal(shape) * scale).astype(np.float32).view(np.uint32).copy()
    flat = out.reshape(-1)
    picks = rng.choice(flat.size, size=min(flat.size, 4 * SPECIAL_F32.size), replace=False)
    flat[picks] = np.resize(SPECIAL_F32, picks.size)
    return out


def store_registers(emu: Sm90Emulator, plan: SmemCopyPlan, move: Move, frag: np.ndarray) -> np.ndarray:
    """``(threads, registers)``: the registers of one store instruction, packed as the generated code packs them
    (the conversion's ``cvt d, a, b`` with the word's higher value as ``a``)."""
    e, conv = plan.elem_bytes, plan.conversion
    out = np.zeros((frag.shape[0], move.atom.registers), dtype=np.uint32)
    for g, word in enumerate(move.words):
        if conv is None:
            parts = [frag[:, v].astype(np.uint32) for v in word]
        elif conv.bits == 16:
            zero = np.zeros(frag.shape[0], dtype=np.uint32)
            pair = emu.cvt_pack(conv, frag[:, word[1]] if len(word) > 1 else zero, frag[:, word[0]])
            parts = [pair]
        else:
            zero = np.zeros(frag.shape[0], dtype=np.uint32)
            halves = [emu.cvt_pack(conv, frag[:, word[k + 1]] if k + 1 < len(word) else zero, frag[:, word[k]])
                      for k in range(0, len(word), 2)]
            parts, e = [h.astype(np.uint32) for h in halves], 2
        word_bits = np.zeros(frag.shape[0], dtype=np.uint64)
        for j, p in enumerate(parts):
            word_bits |= p.astype(np.uint64) << np.uint64(8 * e * j)
        out[:, g] = (word_bits & 0xFFFFFFFF).astype(np.uint32)
    return out


def run_smem_copy(emu: Sm90Emulator, plan: SmemCopyPlan, frag: np.ndarray | None = None, smem_base: int = 0,
                  **values: int) -> np.ndarray | None:
    """Issue every warp's instructions in ``emu``: a store writes ``frag`` (``(threads, values)`` element bits); a
    load returns the fragment it reads, ``(threads, values)`` element bits."""
    e = plan.elem_bytes
    out = np.zeros((plan.threads, plan.values), dtype=np.uint32)
    for k, move in enumerate(plan.moves):
        regs = store_registers(emu, plan, move, frag) if plan.op == "st" and frag is not None else None
        for w in range(plan.warps):
            lanes = slice(32 * w, 32 * w + 32)
            addresses = plan.warp_addresses(k, w, smem_base, **values)
            if regs is not None:
                emu.smem_store(move.atom, addresses, regs[lanes])
                continue
            got = emu.smem_load(move.atom, addresses)
            data = np.ascontiguousarray(got).view(np.uint8).reshape(32, -1)
            for g, word in enumerate(move.words):
                for j, v in enumerate(word):
                    chunk = data[:, 4 * g + j * e:4 * g + (j + 1) * e]
                    out[lanes, v] = (chunk.astype(np.uint32) << (8 * np.arange(e, dtype=np.uint32))).sum(axis=1)
    return out if plan.op == "ld" else None


def expected_tile(plan: SmemCopyPlan, frag: np.ndarray, image: np.ndarray, shift: int = 0) -> np.ndarray:
    """The shared image a store must leave: ``image`` with every held element's converted bytes at its address."""
    e = plan.elem_bytes
    want = image.copy()
    values = frag if plan.conversion is None else round_f32(frag, plan.conversion.dst, plan.conversion.satfinite)
    where = smem_element_offsets(plan.smem)[plan.table] * e + shift
    for k in range(e):
        want[(where + k).ravel()] = ((values.astype(np.uint64) >> np.uint64(8 * k)) & 0xFF).astype(np.uint8).ravel()
    return want


def _loaded(plan: SmemCopyPlan, image: np.ndarray, shift: int) -> np.ndarray:
    """``(threads, values)``: what the layouts say each loaded value is (an unpacking load: the element's nibble,
    element ``i`` of a 16-byte unit being nibble ``i`` of its first 8 bytes)."""
    e = plan.elem_bytes
    where = smem_element_offsets(plan.smem)[plan.table] * e + shift
    if plan.source is not None:
        unit, i = where // 16 * 16, where % 16
        return ((image[unit + i // 2] >> (4 * (i % 2))) & 0xF).astype(np.uint32)
    return sum(image[where + k].astype(np.uint32) << np.uint32(8 * k) for k in range(e))


def _image_bytes(plan: SmemCopyPlan) -> int:
    return smem_bytes_needed(plan.smem) + sum((s.extent - 1) * s.smem_step for s in plan.stages)


def _compare(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if not np.array_equal(got, want):
        k = int(np.argwhere(got != want)[0][0])
        raise EmulationError(f"{what}: byte {k} is {got[k]:#04x}, the layouts say {want[k]:#04x} "
                             f"({int((got != want).sum())} bytes differ)")


def verify_smem_copy(plan: SmemCopyPlan, seed: int = 0) -> None:
    """Emulate ``plan`` (at the first and last value of each run-time index) and compare with the layouts."""
    if not isinstance(plan, SmemCopyPlan):
        raise TypeError(f"verify_smem_copy: expected a SmemCopyPlan (make_smem_copy), got {type(plan).__name__}")
    nbytes = _image_bytes(plan)
    for values in ({s.name: 0 for s in plan.stages}, {s.name: s.extent - 1 for s in plan.stages}):
        shift = sum(v * s.smem_step for s, v in zip(plan.stages, values.values()))
        emu = Sm90Emulator(smem_bytes=nbytes)
        if plan.op == "st":
            frag = fragment_bits(plan, seed)
            emu.write_smem(0, np.full(nbytes, _MARKER, dtype=np.uint8))
            run_smem_copy(emu, plan, frag, **values)
            want = expected_tile(plan, frag, np.full(nbytes, _MARKER, dtype=np.uint8), shift)
            _compare(emu.ctas[0].smem, want, f"store at {values or 'stage 0'}, shared memory")
            continue
        image = np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
        emu.write_smem(0, image)
        got = run_smem_copy(emu, plan, None, 0, **values)
        assert got is not None
        want = _loaded(plan, image, shift)
        if not np.array_equal(got, want):
            t, v = np.argwhere(got != want)[0]
            raise EmulationError(f"load: thread {t} value {v} (coordinate {plan.coordinate(t, v)}) is "
                                 f"{int(got[t, v]):#x}, the tile holds {int(want[t, v]):#x}")


def run_epilogue(emu: Sm90Emulator, plan: "EpiloguePlan", frag: np.ndarray, gmem: np.ndarray,
                 origin: tuple[int, ...], smem_base: int = 0, **values: int) -> None:
    """Registers -> shared -> global in ``emu``: every warp's store instructions, then (after the fence and the
    barrier, which order but change no byte) the TMA store's boxes into ``gmem`` (the array's bytes, in place)."""
    run_smem_copy(emu, plan.store, frag, smem_base, **values)
    for issue in plan.tma.stream(smem_base, *plan.tma_arguments(origin), **values):
        emu.tma_store(plan.tma.tensor_map, gmem, issue.coords, issue.smem)


def expected_array(plan: "EpiloguePlan", frag: np.ndarray, gmem: np.ndarray, origin: tuple[int, ...]) -> np.ndarray:
    """The array bytes the epilogue must leave: every fragment element, converted, at its array coordinate (origin
    plus its tile coordinate); elements past the array are dropped, every other byte unchanged."""
    store = plan.store
    e = store.elem_bytes
    values = frag if store.conversion is None else round_f32(frag, store.conversion.dst, store.conversion.satfinite)
    modes = whole_array_modes(plan.tma.gmem, "expected_array")
    extents = mode_extents(store.smem.layout)
    idx, inside, prefix = store.table.ravel(), np.ones(store.table.size, dtype=bool), 1
    offset = np.zeros(store.table.size, dtype=np.int64)
    for (n, d), extent, o in zip(modes, extents, origin):
        c = o + (idx // prefix) % extent
        inside &= c < n
        offset = offset + c * d
        prefix *= extent
    want = gmem.copy()
    for k in range(e):
        byte = ((values.ravel().astype(np.uint64) >> np.uint64(8 * k)) & 0xFF).astype(np.uint8)
        want[(offset * e + k)[inside]] = byte[inside]
    return want


def verify_epilogue(plan: "EpiloguePlan", seed: int = 0) -> None:
    """Emulate the epilogue for the first and the last tile of the array (the last run-time stage) and compare the
    array with the layouts alone."""
    from ..copy.smem_ldst.epilogue import EpiloguePlan
    if not isinstance(plan, EpiloguePlan):
        raise TypeError(f"verify_epilogue: expected an EpiloguePlan (make_epilogue), got {type(plan).__name__}")
    modes = whole_array_modes(plan.tma.gmem, "verify_epilogue")
    last = tuple((-(-n // t) - 1) * t for (n, _), t in zip(modes, plan.tile_shape))
    rng = np.random.default_rng(seed)
    for origin, values in ((tuple(0 for _ in modes), {s.name: 0 for s in plan.store.stages}),
                           (last, {s.name: s.extent - 1 for s in plan.store.stages})):
        frag = fragment_bits(plan.store, seed)
        gmem = rng.integers(0, 256, plan.tma.array_bytes, dtype=np.uint8)
        emu = Sm90Emulator(smem_bytes=_image_bytes(plan.store))
        want = expected_array(plan, frag, gmem, origin)
        run_epilogue(emu, plan, frag, gmem, origin, **values)
        _compare(gmem, want, f"epilogue tile at {origin}, the array")
