"""Standalone kernels for a plan: an issue-only probe (for SASS and PTX checks) and a full round trip.

Round trip, one CTA of 128 threads (a 2-CTA cluster for cta_group 2, the even CTA issuing):
  1. fill the shared buffer from global memory through the source tensor's layout and swizzle;
  2. warp 0 allocates TMEM (``tcgen05.alloc``) and relinquishes the allocation permit;
  3. every warp zeroes its TMEM lane quadrant (``tcgen05.st``; alloc does not clear TMEM);
  4. ``fence.proxy.async.shared::cta`` so the async proxy sees the fill, then a CTA (or cluster) barrier;
  5. warp 0 calls the generated function, which elects one lane to issue the copies; that lane (elected again)
     commits them with ``tcgen05.commit`` to an mbarrier (CTA mask 0b11 for cta_group 2);
  6. every thread waits on the mbarrier, then each warp reads its quadrant with ``tcgen05.ld.32x32b``;
  7. ``tcgen05.wait::ld``, store to global, barrier, ``tcgen05.dealloc``.

With ``-DPYCUTE_TIME_COPY`` thread 0 of each CTA also stores the clock64 cycles from the issue to the mbarrier
completion after the readback words (two words per CTA).

Compiled with ``-DPYCUTE_SOFT_TCGEN05`` (for a GPU without tcgen05, e.g. sm_90a) the tcgen05 instructions are
replaced by a software model over a TMEM image in shared memory (reached through distributed shared memory for
the CTA pair); everything else, including the cluster launch and the mbarrier protocol, is unchanged. The model
lives in the round-trip kernel only: it replaces the generated function's per-form wrapper by defining that
wrapper's include guard first, so the function a user composes is compiled unchanged.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..arch.sm100.descriptor import LBO, SBO, START_ADDRESS, SWIZZLE
from ..arch.sm100.swizzle_modes import SwizzleMode
from ..arch.sm100.tmem import LANE_SHIFT, QUADRANT_LANES
from ..atoms.tcgen05_ld import TmemLoadAtom, TmemStoreAtom
from ..compile.nvrtc import compile_cuda
from ..copy.plan import CopyPlan
from ..copy.reference import expected_tmem, smem_bytes_needed, smem_element_offsets
from ..errors import CompileError
from ..int_tuple import flatten
from ..layout import coalesce
from .constants import field_get, lane_table, swizzle_tables
from .emit import commit_asm, emit_device_function, helper_guard, helper_name
from .templates import render

__all__ = ["probe_source", "no_call_probe_source", "roundtrip_source", "RoundTrip", "Timing", "PROBE_SHARED_SYMBOL", "probe_entry"]

PROBE_SHARED_SYMBOL = "pycute_probe_smem"
_LOAD = TmemLoadAtom("32x32b", 8)      # the readback: each warp's lanes, 8 columns per load
_STORE = TmemStoreAtom("32x32b", 8)    # the zeroing before the copy


def probe_entry(name: str) -> str:
    """The kernel name of ``probe_source(plan, name)``."""
    return f"{name}_probe"


def probe_source(plan: CopyPlan, name: str = "pycute_copy") -> str:
    """The device function and a kernel that only calls it: what SASS and PTX checks compile."""
    return render("probe.cu", function=emit_device_function(plan, name), name=name,
                  shared_symbol=PROBE_SHARED_SYMBOL, call=f"{name}({PROBE_SHARED_SYMBOL}, tmem_base);")


def no_call_probe_source(name: str = "pycute_no_call") -> str:
    """The probe kernel without the call: the baseline that issue costs are measured against."""
    return render("probe.cu", function="", name=name, shared_symbol=PROBE_SHARED_SYMBOL, call="")


def _src_offset_function(plan: CopyPlan) -> str:
    """``pycute_src_byte_offset(i)``: logical element i -> byte offset in the shared buffer (generated)."""
    src = plan.src
    c = coalesce(src.layout)
    shapes, strides = flatten(c.shape), flatten(c.stride)
    lines = ["// Logical element i of the source region -> byte offset from the shared buffer base: the region's",
             f"// layout {src.layout!r} at element offset {src.offset}"
             + (f", then the swizzle {src.swizzle!r}" if src.swizzle is not None else "") + ".",
             "__device__ __forceinline__ unsigned pycute_src_byte_offset(unsigned i) {",
             f"  unsigned e = {src.offset}u;"]
    prefix = 1
    for n, d in zip(shapes, strides):
        if n > 1 and d:
            lines.append(f"  e += ((i / {prefix}u) % {n}u) * {d}u;")
        prefix *= n
    sw = src.swizzle
    if sw is not None and sw.bits:
        lines.append(f"  e ^= (e & 0x{sw.yyy_mask:X}u) >> {sw.shift};")
    lines += [f"  return e * {src.bits // 8}u;", "}"]
    return "\n".join(lines)


def _soft_model() -> str:
    return render("soft_tcgen05.cuh", swizzle_tables=swizzle_tables("pycute_soft"),
                  desc_start=field_get(START_ADDRESS, "desc"), desc_lbo=field_get(LBO, "desc"),
                  desc_sbo=field_get(SBO, "desc"), desc_swizzle=field_get(SWIZZLE, "desc"), lane_shift=LANE_SHIFT,
                  column_mask=f"0x{(1 << LANE_SHIFT) - 1:X}", window_mask=f"0x{START_ADDRESS.limit - 1:X}",
                  code_none=SwizzleMode.NONE.code)


def _soft_wrapper(atom) -> str:
    return render("soft_wrapper.cuh", ptx=atom.ptx, guard=helper_guard(atom), helper=helper_name(atom),
                  rows=atom.rows, replicas=atom.replicas, units=atom.units, cta_group=atom.cta_group,
                  lane_table=lane_table(atom))


def roundtrip_source(plan: CopyPlan, name: str = "pycute_copy") -> str:
    """A complete round-trip kernel ``<name>_roundtrip(const unsigned char* values, unsigned* out)``."""
    if plan.src.bits not in (8, 16, 32):
        raise CompileError(f"round-trip kernels fill shared memory element by element and support 8, 16 and 32-bit "
                           f"elements; {plan.src.dtype.name} has {plan.src.bits}")
    g = plan.cta_group
    chunk = _LOAD.num
    if g == 2:
        soft_commit = ('for (unsigned c = 0; c < 2u; ++c) { asm volatile("mbarrier.arrive.release.cluster.'
                       'shared::cluster.b64 _, [%0];" :: "r"(pycute_mapa(mbar, c)) : "memory"); }')
        sync = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.'
                'aligned;" ::: "memory");')
    else:
        soft_commit = ('asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: '
                       '"r"(pycute_mapa(mbar, cta)) : "memory");')
        sync = "__syncthreads();"
    return render(
        "roundtrip.cu", smem_bytes=smem_bytes_needed(plan.src), tmem_cols=plan.dst.columns,
        elements=plan.src.layout.size(), element_bytes=plan.src.bits // 8, soft_model=_soft_model(),
        soft_wrapper=_soft_wrapper(plan.atom), function=emit_device_function(plan, name),
        src_offset=_src_offset_function(plan), threads=128 * g, cluster=" __cluster_dims__(2, 1, 1)" if g == 2 else "",
        name=name, cta_group=g, ctas=g, quadrant_lanes=QUADRANT_LANES, lane_shift=LANE_SHIFT, chunk=chunk,
        st_ptx=_STORE.ptx, st_regs=", ".join(["%1"] * chunk), ld_ptx=_LOAD.ptx,
        ld_regs=", ".join(f"%{k}" for k in range(chunk)), ld_outs=", ".join(f'"=r"(v[{k}])' for k in range(chunk)),
        sync=sync, issuer="of the even CTA " if g == 2 else "", is_issuer="(cta & 1u) == 0u" if g == 2 else "true",
        soft_commit=soft_commit, commit=commit_asm(g, "mbar"))


@attrs.frozen
class Timing:
    """A timed round trip: clock64 cycles from issue to mbarrier completion per CTA, and the whole launch's
    duration from CUDA events."""

    copy_cycles: list
    launch_ms: float


@attrs.frozen
class RoundTrip:
    """A round-trip kernel for ``plan``: its source, launch shape, inputs and the expected output."""

    plan: CopyPlan
    name: str = "pycute_copy"

    @property
    def entry(self) -> str:
        return f"{self.name}_roundtrip"

    @property
    def ctas(self) -> int:
        return self.plan.cta_group

    @property
    def smem_bytes(self) -> int:
        return smem_bytes_needed(self.plan.src)

    def dynamic_smem(self, soft: bool) -> int:
        """Dynamic shared memory to launch with: the buffer, 1 KiB of alignment slack, and (soft) the TMEM image."""
        return self.smem_bytes + 1024 + (128 * self.plan.dst.columns * 4 if soft else 0)

    def source(self) -> str:
        return roundtrip_source(self.plan, self.name)

    def compile(self, arch: str = "sm_100a", soft: bool = False, timed: bool = False):
        """NVRTC-compile the kernel; ``soft`` swaps the tcgen05 instructions for the software model, ``timed``
        adds the clock64 measurement of the copy phase."""
        options = (("-DPYCUTE_SOFT_TCGEN05",) if soft else ()) + (("-DPYCUTE_TIME_COPY",) if timed else ())
        return compile_cuda(self.source(), arch=arch, options=options)

    def run(self, gpu, arch: str = "sm_100a", soft: bool = False, seed: int = 0, timed: bool = False):
        """Launch on ``gpu`` (a ``pycute.compile.runtime.Gpu``): returns ``(got, expected)`` as
        (ctas, 128, columns) uint32 arrays, plus a ``Timing`` when ``timed``."""
        values = self.values(seed)
        compiled = self.compile(arch, soft, timed)
        cols = self.plan.dst.columns
        words = self.ctas * 128 * cols
        out = gpu.run(compiled.cubin, self.entry, grid=self.ctas, block=128, dynamic_smem=self.dynamic_smem(soft),
                      inputs=values, out_words=words + (2 * self.ctas if timed else 0), events=timed)
        if not timed:
            return out.reshape(self.ctas, 128, cols), self.expected(values)
        out, ms = out
        cycles = [int(out[words + 2 * c]) | int(out[words + 2 * c + 1]) << 32 for c in range(self.ctas)]
        return out[:words].reshape(self.ctas, 128, cols), self.expected(values), Timing(cycles, ms)

    def values(self, seed: int = 0) -> np.ndarray:
        """Per CTA, the source region's elements in logical order (as bytes), read from a random buffer image so
        that coordinates naming the same element carry the same value."""
        rng = np.random.default_rng(seed)
        index = self._element_bytes()
        return np.concatenate([rng.integers(0, 256, self.smem_bytes, dtype=np.uint8)[index].reshape(-1)
                               for _ in range(self.ctas)])

    def _element_bytes(self) -> np.ndarray:
        """(elements, bytes per element): the buffer byte indices each logical element occupies."""
        ebytes = self.plan.src.bits // 8
        return smem_element_offsets(self.plan.src)[:, None] * ebytes + np.arange(ebytes)[None, :]

    def expected(self, values: np.ndarray) -> np.ndarray:
        """What the kernel must write to ``out``: (ctas, 128 lanes, columns) uint32, TMEM pre-zeroed."""
        src, dst = self.plan.src, self.plan.dst
        index = self._element_bytes()
        result = []
        for vals in values.reshape(self.ctas, *index.shape):
            image = np.zeros(self.smem_bytes, dtype=np.uint8)
            image[index] = vals
            tmem = expected_tmem(src, dst, image, np.zeros((128, 512), dtype=np.uint32), 0)
            result.append(tmem[:, :dst.columns])
        return np.stack(result)
