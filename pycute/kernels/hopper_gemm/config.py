"""The Hopper GEMM's configuration, ``D = scale * A B^T`` (bf16 D, f32 accumulation): A is M x K and B is N x K,
both K-major, bf16 or fp8 e4m3 (per-tensor scale), any M, N and K whose rows are 16-byte aligned. The kernel is
``wgmma`` (sm_90a) fed by TMA, and everything between the instructions comes from plans (``plans.py``):

* ``mainloop`` (``make_pipeline``): a ring of stages filled by the TMA loads of an A and a B tile (B multicast over
  a cluster of CTAs that compute neighbouring M tiles), its barriers, counts, bytes and phases;
* ``mma`` (``make_mma`` with a register accumulator): the k-block's ``wgmma.mma_async`` per warpgroup;
* ``store_d`` (``make_epilogue``): 64 x 64 f32 chunks of the accumulator -> bf16 -> a 128B-swizzled ring of two
  shared tiles per warpgroup (stmatrix) -> proxy fence -> named barrier -> TMA store;
* ``sched`` (``make_tile_scheduler``): persistent CTAs walking the output tiles in L2-friendly bands, the tile
  counts given at run time, so one compiled kernel serves every problem.

Warp roles: warpgroup 0 produces (its load warp waits for each stage, one lane issues; the warpgroup gives registers
back with ``setmaxnreg``); warpgroups 1 and 2 consume: "cooperative", both on one tile (64 rows each), or
"pingpong", each on its own tile in turn (the pipeline hands them the turn), so that one's epilogue overlaps the
other's MMAs. The body, ``kernel.cuh``, is the only hand-written CUDA (``HANDWRITTEN_LINES``, counted by a test),
none of its lines an address, a count, a parity or a register grouping.
"""
from __future__ import annotations

import functools
from pathlib import Path
import attrs

from ...compile.nvrtc import Compiled, compile_cuda
from ...dtypes import dtype as as_dtype, f32
from ...errors import PlanError
from ...mma import wgmma_accumulator
from ...mma.fp8_scaling import Fp8Scaling, ScaleKind, make_fp8_scaling
from ...pipeline.split_cost import SplitCost, choose_k_split, modelled_time
from ...pipeline.split_k import KSplit
from ..fused import OUT_TYPES, FusedEpilogue
from ..protocol import LaunchShape, make_launch_shape
from ..source import handwritten_lines, kernel_source
from .plans import CHUNK, D_TEMPLATE_PAD, DTYPES, TEMPLATE, Dtype, GemmPlans, Mode

__all__ = ["HopperGemm", "Mode", "candidates", "choose", "choose_split", "plan_split", "shared", "MEASURED_TFLOPS",
           "HANDWRITTEN_LINES", "BODY", "SM_SHARED", "kernel_body_lines"]

SM_SHARED = 233472  # one SM's shared memory (228 KiB); each resident CTA also takes 1 KiB (CUDA Programming Guide)
PRODUCER_REGISTERS = 40
BODY = Path(__file__).with_name("kernel.cuh")
WGMMA_ROWS = 64     # rows of one warpgroup's wgmma slice


@attrs.frozen(repr=False, cache_hash=True)        # hashed on every call: the launcher's and the runs' key
class HopperGemm:
    """One kernel configuration: the tile (BN columns; ``m_blocks`` 64-row wgmma blocks per consumer warpgroup),
    the consumers and how they share the tiles, the stages (None: as many as fit), the cluster (CTAs along M that
    share B by multicast), the raster's band height, D's type and the fused epilogue (docs/kernels.md).
    ``split_k``: tiles may be shared by pieces of their k-blocks (split-K / stream-K, ``pipeline.split_k``; the
    launch says how, a ``KSplit``; docs/gemm-shapes.md). ``scales`` (e4m3): the fp8 scales' kind
    (``mma.fp8_scaling``; None: the one ``scale`` argument), promoted every ``promote`` k-blocks (None: all of K in
    the tensor core)."""

    dtype: Dtype = "bf16"
    BN: int = 256
    m_blocks: int = 1
    consumers: int = 2
    mode: Mode = "cooperative"
    stages: int | None = None
    cluster: int = 2
    group: int = 8
    out: str = attrs.field(default="bf16", kw_only=True)
    epilogue: FusedEpilogue = attrs.field(factory=FusedEpilogue, kw_only=True)
    split_k: bool = attrs.field(default=False, kw_only=True)
    scales: ScaleKind | None = attrs.field(default=None, kw_only=True)
    promote: int | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.out not in OUT_TYPES:
            raise PlanError(f"HopperGemm: D's type is one of {', '.join(OUT_TYPES)}, not {self.out!r}")
        if self.scales is not None and self.dtype != "e4m3":
            raise PlanError(f"HopperGemm: scales={self.scales!r} scale fp8 operands, not {self.dtype}")
        if self.promote is not None and self.scales is None:
            raise PlanError(f"HopperGemm: promote={self.promote} needs fp8 scales (scales=...)")
        if self.promote is not None and self.m_blocks * self.BN > 128:
            raise PlanError(f"HopperGemm: promoting a {self.wg_rows} x {self.BN} accumulator per warpgroup doubles "
                            f"its {self.m_blocks * self.BN // 2} registers per thread past the budget: at most 64 x "
                            f"128 per warpgroup")
        if self.scales is not None:
            self.scaling                    # the plan's own checks (block scales: BN and the interval)

    @property
    def scaling(self) -> Fp8Scaling | None:
        """The fp8 scaling plan (None without scales)."""
        if self.scales is None:
            return None
        return make_fp8_scaling(self.scales, (self.BM, self.BN), bk=self.BK, interval=self.promote)

    def __repr__(self) -> str:
        """The fields, D's type and the epilogue only where they are not the plain GEMM's."""
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in ("dtype", "BN", "m_blocks", "consumers", "mode",
                                                                  "stages", "cluster", "group"))
        extra = (f", out={self.out!r}" if self.out != "bf16" else "") + \
            (f", epilogue={self.epilogue.text!r} {self.epilogue.dtypes}" if self.epilogue != FusedEpilogue() else "") + \
            (", split_k=True" if self.split_k else "") + \
            (f", scales={self.scales!r}, promote={self.promote!r}" if self.scales is not None else "")
        return f"HopperGemm({fields}{extra})"

    @property
    def BK(self) -> int:
        return 128 * 8 // DTYPES[self.dtype].bits          # one 128-byte swizzle row of K

    @property
    def wg_rows(self) -> int:
        return WGMMA_ROWS * self.m_blocks

    @property
    def BM(self) -> int:
        return self.wg_rows * (self.consumers if self.mode == "cooperative" else 1)

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def epilogue_bytes(self) -> int:
        """Each consumer's ring of two 64 x 64 tiles of D's type."""
        return self.consumers * self.epilogue_ring_bytes

    @property
    def epilogue_ring_bytes(self) -> int:
        return 2 * 64 * CHUNK * as_dtype(self.out).bits // 8

    @functools.cached_property
    def plans(self) -> GemmPlans:
        return GemmPlans.of(self, TEMPLATE, TEMPLATE + D_TEMPLATE_PAD, TEMPLATE)

    @functools.cached_property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: the rings, the epilogue's tiles and 1 KiB to align the buffer."""
        return self.plans.mainloop.smem_bytes + self.epilogue_bytes + 1024

    @functools.cached_property
    def ctas_per_sm(self) -> int:
        by_smem = SM_SHARED // (self.smem_bytes + 1024 + 8 * self.plans.mainloop.stages * 2)
        return max(1, min(2, by_smem, 1 if self.threads > 256 else 2))

    @property
    def consumer_registers(self) -> int:
        """setmaxnreg's budget for a consumer thread: the CTA's share of the register file less the producer's."""
        per_thread = min(255, 65536 // self.ctas_per_sm // self.threads) // 8 * 8
        return min(240, (per_thread * self.threads - PRODUCER_REGISTERS * 128) // (128 * self.consumers) // 8 * 8)

    @property
    def launch_shape(self) -> LaunchShape:
        return make_launch_shape("gemm", self.threads, self.smem_bytes, self.cluster)

    def constants(self) -> dict[str, bool | int]:
        """The compile-time constants ``kernel.cuh`` reads."""
        coop = self.mode == "cooperative"
        return {"THREADS": self.threads, "CTAS_PER_SM": self.ctas_per_sm, "BM": self.BM, "BN": self.BN,
                "BK": self.BK, "M_BLOCKS": self.m_blocks, "COOPERATIVE": coop,
                "TURNS": 1 if coop else self.consumers, "SLICE_ROWS": WGMMA_ROWS,
                "ACC_VALUES": self.BN // 2, "CHUNK": CHUNK, "CHUNK_VALUES": CHUNK // 2,
                "CHUNKS_N": self.BN // CHUNK, "EPILOGUE_SLOTS": 2, "EPILOGUE_RING_BYTES": self.epilogue_ring_bytes,
                "PRODUCER_REGISTERS": PRODUCER_REGISTERS, "CONSUMER_REGISTERS": self.consumer_registers,
                "SPLIT_K": self.split_k, "PARTS": self.plans.sched.parts, "PROMOTE": self.promote or 0,
                "EPILOGUE_SCALES": self.scales not in (None, "block")}

    def source(self) -> str:
        """The constants, the plans' functions, then ``kernel.cuh``."""
        p = self.plans
        turns = [] if self.mode == "pingpong" else [_ONE_GROUP_TURNS]
        fused = self.epilogue.cuda(wgmma_accumulator(f32, 64, self.BN), wgmma_accumulator(f32, 64, CHUNK),
                                   self.m_blocks)
        scaling = self.scaling
        return kernel_source(repr(self), self.constants(),
                             [p.mainloop.cuda(), *turns, p.mma.cuda("mma", warpgroup_arg=True),
                              p.store_d.cuda("store_d"), fused, p.sched.cuda(),
                              _NO_SCALES if scaling is None else scaling.cuda("fp8s")], BODY)

    def compile(self) -> Compiled:
        return compile_cuda(self.source(), arch="sm_90a", options=("-std=c++17",))

    def explain(self) -> str:
        """The configuration's launch and its plans, each explained."""
        p, s = self.plans, self.launch_shape
        head = (f"{self!r}: {self.BM} x {self.BN} tiles, {p.mainloop.stages} stages, {s.threads} threads, "
                f"{s.smem_bytes} B of shared memory, cluster {s.cluster}, {self.ctas_per_sm} CTA(s) per SM")
        return "\n\n".join([head, p.mainloop.explain(), p.mma.explain(), p.store_d.explain(), p.sched.explain()])


#: Without fp8 scales the promotion and the epilogue's scaling are never called (``if constexpr``) but named.
_NO_SCALES = """// No fp8 scales: nothing to promote or scale.
__device__ __forceinline__ void fp8s_promote(float*, const float*, const float*, const float*, unsigned, unsigned,
                                             unsigned, unsigned, unsigned, unsigned, unsigned) {}
__device__ __forceinline__ void fp8s_scale(float*, const float*, const float*, float, unsigned, unsigned, unsigned,
                                           unsigned, unsigned) {}"""

#: Cooperative consumers are one group: the turn is always theirs (the ping-pong pipeline generates the real ones).
_ONE_GROUP_TURNS = """// One consumer group holds the turn for good: handing it over is nothing.
__device__ __forceinline__ void mainloop_turn_wait(unsigned) {}
__device__ __forceinline__ void mainloop_turn_pass(unsigned) {}"""


def candidates(dtype: Dtype = "bf16") -> list[HopperGemm]:
    """The configurations timed on the H200 (docs/hopper-gemm.md): 128 x 256 cooperative, 128 x 128 per warpgroup
    ping-pong, 128 x 128 cooperative, and 64-row tiles with one consumer for small problems. The same objects on
    every call, so that their plans are made once per process."""
    return list(_candidates(dtype))


@functools.lru_cache(maxsize=None)
def _candidates(dtype: Dtype) -> tuple[HopperGemm, ...]:
    return (HopperGemm(dtype=dtype),
            HopperGemm(dtype=dtype, BN=128, m_blocks=2, mode="pingpong"),
            HopperGemm(dtype=dtype, BN=128),
            HopperGemm(dtype=dtype, BN=128, consumers=1, stages=3),
            HopperGemm(dtype=dtype, BN=64, consumers=1, stages=5, cluster=1))


#: TFLOP/s of each candidate on the whole H200 at 8192^3 bf16 (docs/runs/gemm/hopper-gemm-h200.jsonl, the run of
#: docs/hopper-gemm.md): what ``choose`` weighs the waves of tiles with.
MEASURED_TFLOPS = {(128, 256, "cooperative"): 699.0, (128, 128, "pingpong"): 664.0, (128, 128, "cooperative"): 656.0,
                   (64, 128, "cooperative"): 496.0, (64, 64, "cooperative"): 334.0}


def choose(M: int, N: int, K: int, dtype: Dtype = "bf16", sms: int = 132) -> HopperGemm:
    """The candidate that should finish ``M x N x K`` first: its tiles in waves of ``sms x ctas_per_sm`` CTAs, each
    CTA at its share of the candidate's measured whole-chip rate (tile quantisation and occupancy, no split-K)."""
    def time(g: HopperGemm) -> float:
        per_sm = g.ctas_per_sm
        tiles = -(-M // g.BM) * -(-N // g.BN)
        waves = -(-tiles // (sms * per_sm))
        rate = MEASURED_TFLOPS[(g.BM, g.BN, g.mode)] / (sms * per_sm)
        return waves * 2 * g.BM * g.BN * K / rate
    return min(candidates(dtype), key=time)


@functools.lru_cache(maxsize=None)
def shared(g: HopperGemm) -> HopperGemm:
    """``g`` whose tiles may be shared by pieces of their k-blocks (split-K / stream-K), made once."""
    return g if g.split_k else attrs.evolve(g, split_k=True)


def tile_rate(g: HopperGemm) -> float:
    """The TFLOP/s ``g``'s tile shape measured on the whole H200 (``MEASURED_TFLOPS``; an unmeasured shape at the
    slowest measured rate; fp8 at twice bf16's)."""
    rate = MEASURED_TFLOPS.get((g.BM, g.BN, g.mode), min(MEASURED_TFLOPS.values()))
    return rate * (2 if g.dtype == "e4m3" else 1)


def plan_split(g: HopperGemm, M: int, N: int, K: int, sms: int = 132) -> tuple[KSplit, float]:
    """``g``'s partition of ``M x N x K`` (``choose_k_split``: whole tiles unless sharing them is modelled to
    finish clearly earlier) and its modelled time in nanoseconds."""
    return _plan_tiles(g, (-(-M // g.BM), -(-N // g.BN)), -(-K // g.BK), sms)


@functools.lru_cache(maxsize=4096)
def _plan_tiles(g: HopperGemm, tiles: tuple[int, int], kblocks: int, sms: int) -> tuple[KSplit, float]:
    """``plan_split`` by what it depends on -- the tile grid and the k-blocks, not M, N and K themselves -- and
    remembered: problems of one grid (a decode step's M = 1 .. BM) are planned once (a plan is milliseconds)."""
    sched = shared(g).plans.sched
    clusters = max(1, sms * g.ctas_per_sm // g.cluster)
    cost = SplitCost.from_rate(tile_rate(g), (g.BM, g.BN, g.BK), clusters, g.cluster)
    split = choose_k_split(sched, tiles, kblocks, clusters, cost)
    return split, modelled_time(sched.at(tiles, kblocks, split), clusters, cost)


def choose_split(M: int, N: int, K: int, dtype: Dtype = "bf16", sms: int = 132,
                 among: list[HopperGemm] | None = None) -> tuple[HopperGemm, KSplit]:
    """The configuration (``among`` the candidates) and partition modelled to finish ``M x N x K`` first: each
    candidate's tiles whole or shared (``plan_split``); the configuration returned has ``split_k`` set exactly
    when its tiles are shared."""
    best = min(((g, *plan_split(g, M, N, K, sms)) for g in (among or candidates(dtype))), key=lambda x: x[2])
    g, split, _ = best
    return (shared(g) if split.workers else g), split


def kernel_body_lines() -> int:
    """The hand-written lines of ``kernel.cuh`` (between the kernel's braces; blank, comment and lone-brace lines
    not counted)."""
    return handwritten_lines(BODY.read_text(encoding="utf-8"), "gemm")


HANDWRITTEN_LINES = 84
