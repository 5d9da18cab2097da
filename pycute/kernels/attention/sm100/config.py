"""One sm_100a attention configuration (frozen): the element type, the head dimension, causal or not, the key block
and the K / V stages; the query tile is one cta_group::1 MMA's 128 rows. Every configuration is checked against the
rules it must keep, each refusal naming the rule and the values (``PlanError``)."""
from __future__ import annotations

import functools
from typing import Literal

import attrs

from ....compile.nvrtc import Compiled, compile_cuda
from ....errors import PlanError
from ...protocol import LaunchShape, make_launch_shape
from ..config import Dtype
from .kernel import ENTRY, WARPS, source
from .plans import BLOCK_M, O_CHUNK, Sm100Plans

__all__ = ["Sm100Config", "HEAD_DIMS", "BLOCK_NS", "Arch"]

#: The builds: sm_100a, or the soft sm_90a build (pycute's tcgen05 model) the CPU interpreter runs.
Arch = Literal["sm_100a", "sm_90a"]

#: The head dimensions built (Q, K and V share it): O is 64 or 128 TMEM columns beside two S buffers and P.
HEAD_DIMS = (64, 128)
#: Keys per block: an N of the M 128 kind::f16 MMA for S (PTX ISA #tcgen05-matrix-shape: N a multiple of 16 up to
#: 256) whose two S buffers, P and O fit TMEM's 512 columns, and the K of the P V MMA (whole 16-key k-blocks).
BLOCK_NS = (64, 128)


@attrs.frozen
class Sm100Config:
    """``O = softmax(scale Q K^T) V`` on sm_100a for one element type and head dimension: 128-row query tiles,
    ``block_n`` keys a step, ``kv_stages`` K and V tiles each in flight."""

    dtype: Dtype = "bf16"
    head_dim: int = 128
    causal: bool = False
    block_n: int = 128
    kv_stages: int = 2

    def __attrs_post_init__(self) -> None:
        check_config(self)

    @property
    def block_m(self) -> int:
        return BLOCK_M

    @property
    def threads(self) -> int:
        """Four softmax warps, the load warp and the MMA warp."""
        return 32 * WARPS

    @property
    def name(self) -> str:
        mode = "causal" if self.causal else "full"
        return f"attention_sm100_{self.dtype}_d{self.head_dim}_{BLOCK_M}x{self.block_n}_kv{self.kv_stages}_{mode}"

    @functools.cached_property
    def plans(self) -> Sm100Plans:
        """The plans the compiled kernel is generated from (made for large arrays: a real problem's plans issue the
        same boxes, ``Sm100Plans.issues_as``)."""
        return Sm100Plans.template(self)

    @property
    def smem_bytes(self) -> int:
        return self.plans.smem_bytes

    @property
    def launch_shape(self) -> LaunchShape:
        return make_launch_shape(ENTRY, self.threads, self.smem_bytes)

    def source(self) -> str:
        """The constants, the plans' functions, then ``attention.cuh`` (``kernel.py``)."""
        return source(self)

    def compile(self, arch: Arch = "sm_100a", soft: bool = False, ctas: int = 8) -> Compiled:
        """The sm_100a build, or (``soft``) the sm_90a build with pycute's tcgen05 model (``pycute/tcgen05.cuh``:
        the MMAs, TMEM and its loads and stores plain CUDA, a TMEM image for each of ``ctas`` CTAs)."""
        if arch not in ("sm_100a", "sm_90a") or soft != (arch == "sm_90a"):
            raise PlanError(f"attention (sm_100a): arch={arch!r}, soft={soft}: the kernel builds for sm_100a, or for "
                            f"sm_90a with soft=True (the tcgen05 model)")
        return _compiled(self, arch, soft, ctas)

    def explain(self) -> str:
        p, s = self.plans, self.launch_shape
        head = (f"{self!r}: {BLOCK_M} x {self.block_n} tiles, {s.threads} threads, {s.smem_bytes} B of shared "
                f"memory, {p.alloc!r}")
        return "\n\n".join([head, p.q.explain(), p.k.explain(), p.v.explain(), p.tmem_s.explain(),
                            p.tmem_p.explain(), p.tmem_o.explain(), p.qk.explain(), p.pv.explain(),
                            p.s_read.explain(), p.p_write.explain(), p.o_read.explain(), p.store_o.explain(),
                            p.sched.explain()])


@functools.lru_cache(maxsize=16)
def _compiled(config: Sm100Config, arch: str, soft: bool, ctas: int) -> Compiled:
    options = ("-std=c++17",) + (("-DPYCUTE_SOFT_TCGEN05", f"-DPYCUTE_SOFT_TMEM_CTAS={ctas}") if soft else ())
    return compile_cuda(config.source(), arch=arch, options=options)


def check_config(c: Sm100Config) -> None:
    """The rules a configuration keeps: bf16 or f16, a head dim built (64 or 128: whole 64-column chunks of O), a
    key block the TMEM holds, at least two K and V stages."""
    if c.dtype not in ("bf16", "f16"):
        raise PlanError(f"attention (sm_100a): dtype {c.dtype!r}: the kernel takes bf16 or f16 Q, K and V")
    if c.head_dim not in HEAD_DIMS or c.head_dim % O_CHUNK:
        raise PlanError(f"attention (sm_100a): head dim {c.head_dim}: the kernel is built for head dims "
                        f"{list(HEAD_DIMS)}")
    if c.block_n not in BLOCK_NS:
        raise PlanError(f"attention (sm_100a): block_n={c.block_n}: the kernel is built and checked for block_n in "
                        f"{list(BLOCK_NS)} (from 192 on, two {BLOCK_M} x block_n f32 S buffers, P and O outgrow "
                        f"TMEM's 512 columns)")
    if c.kv_stages < 2:
        raise PlanError(f"attention (sm_100a): kv_stages={c.kv_stages}: at least two K and V stages (the next key "
                        f"block loads while this one is multiplied)")
