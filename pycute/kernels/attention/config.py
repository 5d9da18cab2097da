"""One attention kernel configuration (frozen): the element type, the head dimension, causal or not, packed
variable-length sequences or a dense batch, the tile (``block_m`` rows of Q per CTA: 64 per consumer warpgroup;
``block_n`` keys per step) and the rings' stages. ``AttentionConfig.choose`` is the first guess per head dimension
(FlashAttention-3's tiles for sm_90 where they fit: 192 x 128 for head dim 64, 128 x 128 for 128, 128 x 80 for 256);
every configuration is checked against the rules it must keep, each refusal naming the rule and the values."""
from __future__ import annotations

import functools
from typing import Literal

import attrs

from ...arch.sm90.smem import SMEM_MAX_BYTES
from ...arch.sm90.wgmma import MAXNREG_RANGE, WARPGROUP_THREADS, WGMMA_M, n_values
from ...compile.nvrtc import Compiled, compile_cuda
from ...errors import PlanError
from ..protocol import LaunchShape, make_launch_shape
from .kernel import ENTRY, source
from .plans import AttentionPlans

__all__ = ["Dtype", "AttentionConfig", "HEAD_DIMS", "REGISTERS_PER_SM"]

Dtype = Literal["bf16", "f16"]
#: The head dimensions the kernel is built for (Q, K and V share it).
HEAD_DIMS = (64, 128, 256)
#: 32-bit registers per SM on sm_90 (CUDA C++ Programming Guide, technical specifications per compute capability).
REGISTERS_PER_SM = 65536
#: What the producer warpgroup keeps after ``setmaxnreg.dec`` (one warp issues TMA loads; FlashAttention-3's 24).
PRODUCER_REGISTERS = 24
#: K elements per 16-bit wgmma k-step: P x V runs over the keys of a step in steps of this many.
_K_STEP = 16


@attrs.frozen
class AttentionConfig:
    """``O = softmax(scale Q K^T) V`` for one element type and head dimension. ``consumers`` warpgroups each own 64
    rows of a ``block_m = 64 * consumers`` row tile of Q; ``block_n`` keys per step; ``q_stages`` Q tiles in flight
    (the next tile's Q loads while this one computes; O is staged for its store in its tile's Q stage),
    ``kv_stages`` K and V tiles each. ``turns``: the consumer warpgroups take turns at the tensor cores (one's
    softmax overlaps the other's MMAs)."""

    dtype: Dtype = "bf16"
    head_dim: int = 128
    causal: bool = False
    varlen: bool = False
    block_n: int = 128
    consumers: int = 2
    q_stages: int = 2
    kv_stages: int = 2
    turns: bool = True

    def __attrs_post_init__(self) -> None:
        check_config(self)

    @classmethod
    def choose(cls, head_dim: int, causal: bool = False, dtype: Dtype = "bf16", varlen: bool = False
               ) -> "AttentionConfig":
        """The first guess for a head dimension: FlashAttention-3's sm_90 tiles where they fit pycute's registers
        (192 x 192 at head dim 64 holds S, P and O in 176 registers a thread, over the 160 three consumer
        warpgroups have: ptxas spills and serialises the wgmma, so 192 x 128)."""
        if head_dim == 64:
            return cls(dtype, 64, causal, varlen, block_n=128, consumers=3)
        if head_dim == 128:
            return cls(dtype, 128, causal, varlen, block_n=128, consumers=2)
        if head_dim == 256:
            return cls(dtype, 256, causal, varlen, block_n=80, consumers=2, q_stages=1)
        raise PlanError(f"attention: head dim {head_dim}: the kernel is built for head dims {list(HEAD_DIMS)}")

    @property
    def block_m(self) -> int:
        return WGMMA_M * self.consumers

    @property
    def threads(self) -> int:
        """A producer warpgroup and the consumers."""
        return WARPGROUP_THREADS * (1 + self.consumers)

    @property
    def tile_bytes(self) -> tuple[int, int]:
        """(one Q stage, one K or V stage) in bytes."""
        return self.block_m * self.head_dim * 2, self.block_n * self.head_dim * 2

    @property
    def smem_bytes(self) -> int:
        """The rings (Q, then K, then V) and 1 KiB to align the dynamic buffer (the barriers are static)."""
        q, kv = self.tile_bytes
        return self.q_stages * q + 2 * self.kv_stages * kv + 1024

    @property
    def consumer_registers(self) -> int:
        """setmaxnreg's budget for a consumer thread: the SM's registers less the producer warpgroup's, shared by the
        consumer warpgroups (one CTA per SM)."""
        per_thread = REGISTERS_PER_SM // self.threads // 8 * 8
        budget = (per_thread * self.threads - PRODUCER_REGISTERS * WARPGROUP_THREADS) // (WARPGROUP_THREADS *
                                                                                          self.consumers)
        return min(MAXNREG_RANGE[-1], budget // 8 * 8)

    @property
    def producer_registers(self) -> int:
        return PRODUCER_REGISTERS

    @property
    def name(self) -> str:
        """A name that tells configurations apart: type, head dim, tile, stages, turns, mask, lengths."""
        mode = ("causal" if self.causal else "full") + ("_varlen" if self.varlen else "") + \
            ("" if self.turns or self.consumers == 1 else "_noturns")
        return (f"attention_{self.dtype}_d{self.head_dim}_{self.block_m}x{self.block_n}_q{self.q_stages}"
                f"kv{self.kv_stages}_{mode}")

    # ---- the kernel protocol (pycute/kernels/protocol.py) -----------------------------------------------------------
    @functools.cached_property
    def plans(self) -> AttentionPlans:
        """The plans the compiled kernel is generated from (made for large arrays: a real problem's plans issue the
        same boxes, ``AttentionPlans.issues_as``)."""
        return AttentionPlans.template(self)

    @property
    def launch_shape(self) -> LaunchShape:
        return make_launch_shape(ENTRY, self.threads, self.smem_bytes)

    def source(self) -> str:
        """The constants, the plans' functions, then ``attention.cuh`` (``kernel.py``)."""
        return source(self)

    def compile(self) -> Compiled:
        """The sm_90a build (NVRTC's on-disk cache answers a configuration built before)."""
        return _compiled(self)

    def explain(self) -> str:
        """The configuration's launch and its plans, each explained."""
        p, s = self.plans, self.launch_shape
        head = (f"{self!r}: {self.block_m} x {self.block_n} tiles, {s.threads} threads, {s.smem_bytes} B of shared "
                f"memory, {self.consumer_registers} registers a consumer thread")
        parts = [head, p.q.explain(), p.k.explain(), p.v.explain(), p.qk.explain(), p.pv.explain(), p.store_o.explain(),
                 p.sched.explain()]
        return "\n\n".join(parts + ([p.turns.explain()] if p.turns is not None else []))


@functools.lru_cache(maxsize=64)
def _compiled(config: AttentionConfig) -> Compiled:
    return compile_cuda(config.source(), arch="sm_90a", options=("-std=c++17",))


def check_config(c: AttentionConfig) -> None:
    """The rules a configuration keeps: a head dim the kernel is built for, a key block wgmma can multiply (a
    wgmma N for Q K^T, whole k-steps for P V), 1 to 3 consumer warpgroups, stages that fit shared memory."""
    if c.dtype not in ("bf16", "f16"):
        raise PlanError(f"attention: dtype {c.dtype!r}: the kernel takes bf16 or f16 Q, K and V")
    if c.head_dim not in HEAD_DIMS:
        raise PlanError(f"attention: head dim {c.head_dim}: the kernel is built for head dims {list(HEAD_DIMS)}")
    if c.block_n not in n_values(c.dtype) or c.block_n % _K_STEP:
        raise PlanError(f"attention: block_n={c.block_n}: S = Q K^T is one wgmma N (8..256 in steps of 8) and P V "
                        f"runs over the keys in whole {_K_STEP}-element k-steps: a multiple of {_K_STEP} up to 256")
    if not 1 <= c.consumers <= 3:
        raise PlanError(f"attention: consumers={c.consumers}: 1 to 3 consumer warpgroups of 64 rows (a 64 to 192 row "
                        f"tile; the register file holds no more)")
    if c.q_stages < 1 or c.kv_stages < 2:
        raise PlanError(f"attention: q_stages={c.q_stages}, kv_stages={c.kv_stages}: at least one Q stage and two K "
                        f"and V stages (the next key block loads while this one is multiplied)")
    if c.varlen and c.q_stages > 2:
        raise PlanError(f"attention: q_stages={c.q_stages}: packed sequences take at most 2 Q stages (a CTA's two "
                        f"map sets follow the tiles' Q fills)")
    if c.smem_bytes > SMEM_MAX_BYTES:
        q, kv = c.tile_bytes
        raise PlanError(f"attention: {c.q_stages} Q stage(s) x {q} B + 2 x {c.kv_stages} K/V stages x {kv} B + 1024 B "
                        f"of alignment = {c.smem_bytes} B, over sm_90a's {SMEM_MAX_BYTES} B of shared memory per CTA")
