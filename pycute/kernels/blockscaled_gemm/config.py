"""A persistent block-scaled GEMM, ``D = (A * SFA) (B * SFB)^T`` (f32 or bf16 D), from pycute plans. MXF8
(kind::mxf8f6f4: E4M3 elements, one UE8M0 SF per 32 K) or NVFP4 (kind::mxf4nvf4: packed E2M1, one UE4M3 SF per
16 K); cta_group 1 (a CTA per 128 x 128 tile of D) or 2 (a CTA pair per 256 x 128 tile, the even CTA issuing the
pair's MMAs); any M and N, and any K whose rows are whole 16 bytes (TMA). docs/blockscaled-gemm.md walks through it.

Everything between the instructions comes from plans:

* ``operands`` (``make_pipeline``): a ring of stages (as many as shared memory holds) filled by the load warp
  (every lane waits for a stage, one arms it and issues) with the TMA loads of A's and B's tiles and the bulk loads
  of their packed scale factors, released by the MMA warp's ``tcgen05.commit``; in a pair the odd CTA's relay to
  the even CTA's barrier is derived;
* ``accumulators`` (``make_pipeline`` with no loads): two accumulators in TMEM, filled by the MMA's commit and
  released by the epilogue warps, so that the epilogue of one tile overlaps the MMAs of the next;
* ``mainloop`` (``make_mma_mainloop``): the SF copies into TMEM (``tcgen05.cp``, a region per stage), the MMA
  plan and both pipelines, as the producer's and the MMA warp's per-tile functions;
* ``epilogue`` (``make_accumulator_epilogue``): tcgen05.ld of 32-column chunks -> convert -> a 2-slot ring of
  swizzled shared tiles -> TMA store (D's rows padded to whole 16 bytes, ``ldd``: a TMA store writes whole 16-byte
  units, so the pad columns receive B's zero-filled rows' zeros);
* ``sched`` (``make_tile_scheduler``): persistent CTAs walking the tiles, the tile counts given at run time.

Warp roles, per CTA (192 threads): warp 0 loads, warp 1 issues the MMAs (the odd CTA of a pair relays), warps 2-5
store. The body, ``kernel.cuh``, is the only hand-written CUDA (``HANDWRITTEN_LINES``, counted by a test), none of
its lines an address, a count, a parity or a register grouping.

A configuration includes its problem (M, N, K and the persistent CTAs): the packed scale factors' stage addresses
bake K's block count into the bulk loads. ``check.run_whole`` runs the compiled kernel whole on the CPU
(``pycute.interp.run_kernel``); ``python examples/blockscaled_gemm.py`` prints the plans and the SASS counts.
"""
from __future__ import annotations

from typing import Literal

from pathlib import Path
import attrs
import numpy as np

from ...arch.sm100.mma import K_BYTES as MMA_K_BYTES
from ...arch.sm100.swizzle_modes import SwizzleLabel
from ...arch.sm100.tmem import check_cta_group
from ...compile.nvrtc import Compiled, compile_cuda
from ...copy import BulkPlan, TmaPlan, make_bulk_copy, make_tiled_copy, make_tma_copy
from ...dtypes import DType, bf16, f4e2m1, f8e4m3, f32, u8
from ...errors import PlanError
from ...layout import Layout
from ...mma import make_mma, mma_accumulator, scale_factor_smem, scale_factor_tensor
from ...pipeline import (AccumulatorEpilogue, Consumer, MmaMainloop, PipelinePlan, Producer, TileScheduler,
                         make_accumulator_epilogue, make_mma_mainloop, make_pipeline, make_tile_scheduler)
from ...sim.convert import round_f32
from ...sim.operand import reference_mma
from ...sim.verify_mma import exact_codes, exact_sf_codes, sf_power_code
from ...tensor import (GlobalTensor, TmemAllocation, TmemTensor, dynamic, kmajor_smem_tensor, make_global_tensor,
                       make_smem_tensor, make_stages)
from ...tensor.values import smem_element_offsets
from ..protocol import LaunchShape, make_launch_shape
from ..source import handwritten_lines, kernel_source

Kind = Literal["mxf8", "nvfp4"]
DOut = Literal["f32", "bf16"]
BODY = Path(__file__).with_name("kernel.cuh")

TILE_M = 128          # rows of A and of D per CTA
TILE_N = 128          # the MMA's N: two 128 x 128 f32 accumulators and the SF regions fit TMEM's 512 columns
BLOCK_K_BYTES = 128   # K bytes per k-block: one 128B-swizzle row of A and B
CHUNK = 32            # D columns per epilogue store
WARPS = 6             # producer, MMA, four epilogue warps
ACCUMULATORS = 2
#: D's type and its 32-column tile's swizzle.
D_TYPES: dict[str, tuple[DType, SwizzleLabel]] = {"f32": (f32, "128B"), "bf16": (bf16, "64B")}


@attrs.frozen
class BlockScaledPlans:
    """The configuration's plans: the operand and accumulator pipelines, the MMA mainloop, the epilogue and the
    tile scheduler."""

    operands: PipelinePlan
    accumulators: PipelinePlan
    mainloop: MmaMainloop
    epilogue: AccumulatorEpilogue
    sched: TileScheduler


@attrs.frozen
class Format:
    """A block-scaled format: the MMA kind, the element type, the SF type and scale vector (SFs per MMA and row)."""

    kind: str
    dtype: DType
    sf_type: str
    scale_vec: int

    @property
    def block_k(self) -> int:
        """Elements of K per k-block (BLOCK_K_BYTES of them)."""
        return 8 * BLOCK_K_BYTES // self.dtype.bits


FORMATS = {"mxf8": Format("mxf8f6f4", f8e4m3, "ue8m0", 1), "nvfp4": Format("mxf4nvf4", f4e2m1, "ue4m3", 4)}


def stage_bytes(sf) -> int:
    """Bytes of one SF stage: the staging (scale_factor_smem) has no holes."""
    return sf.rows * sf.mmas * sf.scale_vec


def packed_sf_array(sf, row_tiles: int, k_blocks: int) -> GlobalTensor:
    """The packed SF array as (stage bytes, k-block, row tile): every stage one contiguous run, so a bulk copy per
    stage moves it."""
    size = stage_bytes(sf)
    return make_global_tensor(u8, Layout((size, k_blocks, row_tiles), (1, size, size * k_blocks)))


def pack_scale_factors(codes: np.ndarray, sf, row_tiles: int, k_blocks: int, fill: int) -> np.ndarray:
    """``codes`` (rows x SFs along K) as the packed array: stage (tile, k-block) holds its rows' and k-block's SFs
    where ``scale_factor_smem`` places them (the blocked SF layout); rows and SFs past ``codes`` are ``fill``."""
    index = sf_pack_index(sf, codes.shape[0], codes.shape[1], row_tiles, k_blocks)
    return np.where(index >= 0, codes.astype(np.uint8).reshape(-1)[np.maximum(index, 0)], np.uint8(fill))


def sf_pack_index(sf, rows: int, sfs: int, row_tiles: int, k_blocks: int) -> np.ndarray:
    """For each byte of the packed SF array, the flat index (``row * sfs + k``) of the code of a ``rows x sfs``
    matrix it holds, or -1 for a pad (a row or SF past the matrix): the packing as one gather, on any device."""
    slots = sf.mmas * sf.scale_vec
    offsets = smem_element_offsets(scale_factor_smem(sf))           # index row + rows * slot -> byte
    flat = np.arange(rows * sfs, dtype=np.int64).reshape(rows, sfs)
    out = np.full((row_tiles, k_blocks, stage_bytes(sf)), -1, dtype=np.int64)
    for t in range(row_tiles):
        for kb in range(k_blocks):
            block = np.full((sf.rows, slots), -1, dtype=np.int64)
            part = flat[t * sf.rows:(t + 1) * sf.rows, kb * slots:(kb + 1) * slots]
            block[:part.shape[0], :part.shape[1]] = part
            out[t, kb, offsets] = block.T.reshape(-1)
    return out.reshape(-1)


class BlockScaledGemm:
    """The kernel for ``kind`` ("mxf8" / "nvfp4"), ``cta_group``, D's type and one problem (M x K A, N x K B, both
    K-major): its plans, its CUDA source, its inputs and the reference output. ``sms``: the persistent CTAs to
    launch (a multiple of the cluster; default one per tile)."""

    def __init__(self, kind: Kind = "mxf8", cta_group: int = 1, m: int = 256, n: int = 256, k: int = 512,
                 d_type: DOut = "f32", sms: int | None = None):
        if kind not in FORMATS or d_type not in D_TYPES:
            raise PlanError(f"BlockScaledGemm: kind is one of {', '.join(FORMATS)} and d_type one of "
                               f"{', '.join(D_TYPES)}, not {kind!r} / {d_type!r}")
        self.kind, self.format, self.d_type = kind, FORMATS[kind], d_type
        self.cta_group, self.m, self.n, self.k = check_cta_group(cta_group), m, n, k
        f, g = self.format, self.cta_group
        self.k_blocks = -(-k // f.block_k)
        self.tiles = (-(-m // (TILE_M * g)) * g, -(-n // TILE_N))     # CTA tiles along M (whole pairs), along N
        mmas = BLOCK_K_BYTES // MMA_K_BYTES                              # MMAs per k-block
        self.sfa = scale_factor_tensor(f.kind, TILE_M, mmas, f.scale_vec, cta_group=g)
        self.sfb = scale_factor_tensor(f.kind, TILE_N, mmas, f.scale_vec, cta_group=g)
        elem, _ = D_TYPES[d_type]
        self.ldd = -(-n * elem.bits // 128) * 128 // elem.bits         # D's row pitch: whole 16 bytes
        self.sched = make_tile_scheduler(None, cluster=(g, 1), swizzle=2, name="sched")
        units = self.sched.at(self.tiles)
        self.grid = units.grid(sms) if sms is not None else units.units * g
        self._accumulators()
        self._operands()
        self._mainloop()

    def _operands(self) -> None:
        """The operand pipeline: TMA loads of A's and B's tiles (B's rows split over a pair), bulk loads of the SF
        stages, re-planned by the pipeline over rings of as many stages as fit beside the epilogue's tiles."""
        f, g = self.format, self.cta_group
        a = make_global_tensor(f.dtype, Layout((self.m, self.k), (self.k, 1)))
        b = make_global_tensor(f.dtype, Layout((self.n, self.k), (self.k, 1)))
        self.a_tile = kmajor_smem_tensor(f.dtype, TILE_M, f.block_k, "128B")
        self.b_tile = kmajor_smem_tensor(f.dtype, TILE_N // g, f.block_k, "128B")
        loads: dict[str, TmaPlan | BulkPlan] = {"a": make_tma_copy(self.a_tile, a), "b": make_tma_copy(self.b_tile, b)}
        for name, sf, tiles in (("sfa", self.sfa, self.tiles[0]), ("sfb", self.sfb, self.tiles[1])):
            size = stage_bytes(sf)
            flat = make_smem_tensor(u8, Layout((size, 1, 1), (1, size, size)))
            loads[name] = make_bulk_copy(flat, packed_sf_array(sf, tiles, self.k_blocks))
        # beside the rings: the epilogue's tiles, the accumulators' barriers, the TMEM slot (and the soft build's
        # anchor word), the dynamic buffer's alignment slack and 128 B for the placement of the static variables
        reserve = self.epilogue.smem_bytes + self.accumulators.barrier_bytes + 8 + 1024 + 128
        self.operands = make_pipeline(loads, consumer=Consumer("warp", 1, "commit", cta_group=g),
                                         producer=Producer("tma", "warp"), arch="sm_100a", reserve=reserve,
                                         name="mainloop")

    def _accumulators(self) -> None:
        """Two accumulators in TMEM (the allocation's first columns), their pipeline, and the epilogue that drains
        them into D (M x ldd) through 32-column tiles of D's type."""
        g = self.cta_group
        self.accumulators = make_pipeline(consumer=Consumer("warp", 4), stages=ACCUMULATORS, arch="sm_100a",
                                             producer=Producer("commit", "warp", cta_group=g), name="accum")
        self.alloc = TmemAllocation(cta_group=g)
        ring = make_stages(mma_accumulator(f32, TILE_M * g, TILE_N, g), ACCUMULATORS)
        self.accumulator = self.alloc.add(f32, ring.layout, name="accumulators")[:, :, dynamic("acc")]
        dtype, swizzle = D_TYPES[self.d_type]
        d = make_global_tensor(dtype, Layout((self.m, self.ldd), (self.ldd, 1)))
        self.epilogue = make_accumulator_epilogue(self.accumulators, self.accumulator, d,
                                                     kmajor_smem_tensor(dtype, TILE_M, CHUNK, swizzle))

    def _mainloop(self) -> None:
        """The SF regions in TMEM (one per stage), the SF copies, the MMA and the mainloop."""
        f, g, ops = self.format, self.cta_group, self.operands
        copies = {}
        for which, sf in (("sfa", self.sfa), ("sfb", self.sfb)):
            # a region per stage: the copy into stage s waits (the stage's barriers) for the MMAs that read it;
            # tcgen05.mma -> tcgen05.cp is no pipelined pair (PTX ISA #tcgen05-memory-consistency-model)
            sf_ring = make_stages(sf.tensor, ops.stages)
            assert isinstance(sf_ring, TmemTensor)
            tmem = self.alloc.add(u8, sf_ring.layout, replica=sf_ring.replica, name=which)
            copies[which] = make_tiled_copy(tmem[:, :, dynamic("stage")], ops.ring(which, scale_factor_smem(sf)),
                                               cta_group=g)
        self.mma = make_mma(self.accumulator.at(acc=0), ops.ring("a", self.a_tile), ops.ring("b", self.b_tile),
                               sfa=self.sfa, sfb=self.sfb, kind=f.kind, scale_type=f.sf_type, cta_group=g)
        self.mainloop = make_mma_mainloop(ops, self.accumulators, self.mma, accumulator=self.accumulator,
                                             modes={"a": "mk", "b": "nk", "sfa": "-km", "sfb": "-kn"},
                                             tmem=self.alloc, threads=32 * WARPS, sf_copies=copies, name="gemm")

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: the rings, the epilogue's tiles and 1 KiB to align the buffer."""
        return self.operands.smem_bytes + self.epilogue.smem_bytes + 1024

    def planned_counts(self) -> dict[str, int]:
        """Instructions of each family in one pass of each role's loop body: a k-block's loads, SF copies and
        MMAs (and the stage's and the accumulator's commits), an epilogue chunk's read and store."""
        return {"tma": sum(len(p.instructions) for n, p in self.operands.loads if n in ("a", "b")),
                "bulk": sum(len(p.instructions) for n, p in self.operands.loads if n in ("sfa", "sfb")),
                "tcgen05.cp": sum(len(p.instructions) for _, p in self.mainloop.sf_copies),
                "tcgen05.mma": len(self.mma.instructions), "tcgen05.commit": 2,
                "tcgen05.ld": len(self.epilogue.read.per_warp),
                "tma.store": len(self.epilogue.store.tma.instructions)}

    def source(self) -> str:
        """The configuration's constants, the plans' generated functions, then ``kernel.cuh``: each warp role walks
        the scheduler's tiles with its per-tile function (one loop per role, so that ptxas proves every warp
        converged at elect.sync and adds no diverged-warp copy of the issue code)."""
        return kernel_source(repr(self), {"THREADS": 32 * WARPS},
                             [self.mainloop.cuda(), self.epilogue.cuda(), self.sched.cuda()], BODY)

    @property
    def launch_shape(self) -> LaunchShape:
        """The entry, its 192 threads, its dynamic shared memory, and a cluster of the CTA pair (cta_group 2)."""
        return make_launch_shape("blockscaled_gemm", 32 * WARPS, self.smem_bytes, self.cta_group)

    @property
    def plans(self) -> BlockScaledPlans:
        return BlockScaledPlans(self.operands, self.accumulators, self.mainloop, self.epilogue, self.sched)

    def _key(self) -> tuple:
        return (self.kind, self.cta_group, self.m, self.n, self.k, self.d_type, self.grid)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlockScaledGemm) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"BlockScaledGemm({self.kind!r}, cta_group={self.cta_group}, m={self.m}, n={self.n}, k={self.k}, "
                f"d_type={self.d_type!r}, grid={self.grid})")

    def compile(self, arch: str = "sm_100a", soft: bool = False, lineinfo: bool = False) -> Compiled:
        """The cubin; ``soft`` builds the header's tcgen05 model, with a TMEM image for every CTA of the grid."""
        options = ("-DPYCUTE_SOFT_TCGEN05", f"-DPYCUTE_SOFT_TMEM_CTAS={self.grid}") if soft else ()
        return compile_cuda(self.source(), arch=arch, options=options + (("-lineinfo",) if lineinfo else ()))

    def inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Element codes of A (M x K) and B (N x K) and SF codes (rows x SFs along K), exact in f32: every product
        and partial sum of the reference is exactly representable, so the comparison is bit for bit."""
        rng = np.random.default_rng(seed)
        f = self.format
        sfs = -(-self.k // self.vector)
        return {"a": exact_codes(f.dtype.name, f.dtype.bits, rng, (self.m, self.k)),
                "b": exact_codes(f.dtype.name, f.dtype.bits, rng, (self.n, self.k)),
                "sfa": exact_sf_codes(f.sf_type, rng, (self.m, sfs)),
                "sfb": exact_sf_codes(f.sf_type, rng, (self.n, sfs))}

    @property
    def vector(self) -> int:
        """Elements of K per SF."""
        return self.format.block_k // (self.sfa.mmas * self.format.scale_vec)

    def reference(self, x: dict[str, np.ndarray]) -> np.ndarray:
        """D from the codes alone (K padded with zeros to whole SF vectors), as D's type holds it: f32, or the
        bf16 encodings (uint16) of the f32 result rounded to nearest even, as the epilogue's cvt.rn does."""
        f = self.format
        pad = x["sfa"].shape[1] * self.vector - self.k
        a, b = (np.pad(x[t], ((0, 0), (0, pad))) for t in ("a", "b"))
        d = reference_mma(a, b, f.dtype.name, f.dtype.name, x["sfa"], x["sfb"], f.sf_type, self.vector)
        d = np.asarray(d, dtype=np.float32)
        return d if self.d_type == "f32" else round_f32(d.view(np.uint32), "bf16")

    def _operand_bytes(self, codes: np.ndarray) -> np.ndarray:
        """Row-major K-major bytes of element codes (two 4-bit codes to a byte, the lower K in the low nibble)."""
        if self.format.dtype.bits == 8:
            return codes.astype(np.uint8).reshape(-1)
        c = codes.astype(np.uint8)
        return (c[:, 0::2] | (c[:, 1::2] << 4)).reshape(-1)

    def arrays(self, x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The kernel's global arrays: A and B row-major, SFA and SFB packed, and D (M x ldd) filled with NaN."""
        fill = int(sf_power_code(self.format.sf_type, 0))   # 1.0 pads past M, N and K (the elements there are 0)
        d = np.full(self.m * self.ldd, np.nan, np.float32) if self.d_type == "f32" else \
            np.full(self.m * self.ldd, 0x7FFF, np.uint16)
        return {"a": self._operand_bytes(x["a"]), "b": self._operand_bytes(x["b"]), "d": d,
                **{t: pack_scale_factors(x[t], sf, tiles, self.k_blocks, fill)
                   for t, sf, tiles in (("sfa", self.sfa, self.tiles[0]), ("sfb", self.sfb, self.tiles[1]))}}

    def result(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(D, the pad columns)`` from the D array the kernel wrote."""
        rows = d.reshape(self.m, self.ldd)
        return rows[:, :self.n], rows[:, self.n:]

    def run(self, gpu, arch: str = "sm_90a", soft: bool = True, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Launch on ``gpu`` (``pycute.compile.runtime.Gpu``): ``(D as the kernel wrote it, the reference)``; the
        pad columns must hold zeros (ValueError otherwise)."""
        from pycute.compile import runtime
        x = self.inputs(seed)
        data = self.arrays(x)
        bufs = {t: gpu.upload(data[t]) for t in ("a", "b", "sfa", "sfb", "d")}
        loads = dict(self.operands.loads)
        maps = [runtime.tensor_map_arg(p.tensor_map, int(bufs[t].handle))
                for p, t in ((loads["a"], "a"), (loads["b"], "b"), (self.epilogue.store.tma, "d"))]
        kernel = gpu.kernel(self.compile(arch, soft), "blockscaled_gemm")
        gpu.launch(kernel, maps[0], maps[1], bufs["sfa"], bufs["sfb"], maps[2], np.uint32(self.tiles[0]),
                   np.uint32(self.tiles[1]), np.uint32(self.k_blocks), grid=self.grid, block=32 * WARPS,
                   cluster=self.launch_shape.cluster, dynamic_smem=self.smem_bytes)
        got, pad = self.result(gpu.download(bufs["d"], data["d"].dtype, data["d"].size))
        if np.any(pad != 0):
            raise ValueError(f"the pad columns of D hold {np.count_nonzero(pad != 0)} non-zero value(s)")
        return got, self.reference(x)


def kernel_body_lines() -> int:
    """The hand-written lines of ``kernel.cuh`` (between the kernel's braces; blank, comment and lone-brace lines
    not counted)."""
    return handwritten_lines(BODY.read_text(encoding="utf-8"), "blockscaled_gemm")


HANDWRITTEN_LINES = 19
