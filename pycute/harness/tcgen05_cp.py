"""The tcgen05.cp round trip: a kernel that fills shared memory, runs a plan's copy and reads TMEM back, compiled,
launched and checked against the layouts.

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

Every step is a ``pycute/sm100.cuh`` helper, so this kernel is the header's test: compiled with
``-DPYCUTE_SOFT_TCGEN05`` (for a GPU without tcgen05, e.g. sm_90a) the header's helpers and the generated
function's form wrappers run the software model (TMEM images in global memory, the peer's shared memory through
DSMEM); everything else, including the cluster launch and the mbarrier protocol, is the real hardware's. A user's
kernel built on the header gets the same two builds.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..copy.tcgen05_cp.reference import expected_tmem
from ..tensor.values import smem_bytes_needed, smem_element_offsets
from ..errors import CompileError
from ..int_tuple import flatten
from ..layout import coalesce
from ..codegen.tcgen05_cp import emit_device_function
from ..codegen.tcgen05_ldst import ldst_helper
from ..codegen.templates import render
from ..compile.nvrtc import Compiled

__all__ = ["roundtrip_source", "RoundTrip", "Timing"]

_CHUNK = 8      # the readback and the zeroing move 8 columns per tcgen05.ld / st (32x32b.x8)


def _src_offset_function(plan: Tcgen05CpPlan, name: str) -> str:
    """``<name>_src_byte_offset(i)``: logical element i -> byte offset in the shared buffer (generated)."""
    src = plan.src
    c = coalesce(src.layout)
    shapes, strides = flatten(c.shape), flatten(c.stride)
    lines = ["// Logical element i of the source region -> byte offset from the shared buffer base: the region's",
             f"// layout {src.layout!r} at element offset {src.offset}"
             + (f", then the swizzle {src.swizzle!r}" if src.swizzle is not None else "") + ".",
             f"__device__ __forceinline__ unsigned {name}_src_byte_offset(unsigned i) {{",
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


def roundtrip_source(plan: Tcgen05CpPlan, name: str = "pycute_copy") -> str:
    """A complete round-trip kernel ``<name>_roundtrip(const unsigned char* values, unsigned* out)``; kernels of
    different names compose in one translation unit (one NVRTC call for many)."""
    if plan.src.bits not in (8, 16, 32):
        raise CompileError(f"round-trip kernels fill shared memory element by element and support 8, 16 and 32-bit "
                           f"elements; {plan.src.dtype.name} has {plan.src.bits}")
    g = plan.cta_group
    return render(
        "roundtrip.cu", smem_bytes=smem_bytes_needed(plan.src), tmem_cols=plan.dst.alloc_columns,
        elements=plan.src.layout.size(), element_bytes=plan.src.bits // 8, function=emit_device_function(plan, name),
        src_offset=_src_offset_function(plan, name), threads=128 * g,
        cluster=" __cluster_dims__(2, 1, 1)" if g == 2 else "",
        name=name, cta_group=g, ctas=g, chunk=_CHUNK, st=ldst_helper("st", _CHUNK), ld=ldst_helper("ld", _CHUNK),
        sync="pycute_cluster_sync();" if g == 2 else "__syncthreads();", issuer="of the even CTA " if g == 2 else "",
        is_issuer="(cta & 1u) == 0u" if g == 2 else "true")


@attrs.frozen
class Timing:
    """A timed round trip: clock64 cycles from issue to mbarrier completion per CTA, and the whole launch's
    duration from CUDA events."""

    copy_cycles: list
    launch_ms: float


def _check_plan(plan) -> None:
    if not isinstance(plan, Tcgen05CpPlan):
        raise TypeError(f"RoundTrip: expected a Tcgen05CpPlan (make_tiled_copy), got {type(plan).__name__}")


@attrs.frozen
class RoundTrip:
    """A round-trip kernel for ``plan``: its source, launch shape, inputs and the expected output."""

    plan: Tcgen05CpPlan = attrs.field(validator=lambda _, __, v: _check_plan(v))
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

    def dynamic_smem(self, soft: bool = False) -> int:
        """Dynamic shared memory to launch with: the buffer and 1 KiB of alignment slack (the soft model keeps its
        TMEM image in global memory)."""
        return self.smem_bytes + 1024

    def source(self) -> str:
        return roundtrip_source(self.plan, self.name)

    def compile(self, arch: str = "sm_100a", soft: bool = False, timed: bool = False) -> Compiled:
        """NVRTC-compile the kernel; ``soft`` swaps the tcgen05 instructions for the software model, ``timed``
        adds the clock64 measurement of the copy phase."""
        options = (("-DPYCUTE_SOFT_TCGEN05",) if soft else ()) + (("-DPYCUTE_TIME_COPY",) if timed else ())
        return compile_cuda(self.source(), arch=arch, options=options)

    def run(self, gpu: Gpu, arch: str = "sm_100a", soft: bool = False, seed: int = 0,
            timed: bool = False) -> tuple:
        """Launch on ``gpu`` (a ``pycute.compile.runtime.Gpu``): returns ``(got, expected)`` as
        (ctas, 128, columns) uint32 arrays, plus a ``Timing`` when ``timed``."""
        gpu = check_gpu(gpu)
        values = self.values(seed)
        compiled = self.compile(arch, soft, timed)
        cols = self.plan.dst.alloc_columns
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
            result.append(tmem[:, :dst.alloc_columns])
        return np.stack(result)
