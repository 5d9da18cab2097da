"""The Tensor Memory Accelerator (TMA) and its tensor maps, as data: the encoder's rules (CUDA driver API,
``cuTensorMapEncodeTiled``), the swizzle modes on byte addresses (PTX ISA #tensor-swizzling-modes), the element
types a map can name, and the instruction spellings (PTX ISA #data-movement-and-conversion-instructions-cp-async-
bulk-tensor). docs/tma.md records which of these were settled by running cases on the H200."""
from __future__ import annotations

from typing import Literal

import attrs

from ...errors import PlanError
from ...swizzle import Swizzle
from ..sm80.cache import CACHE_HINT
from .smem import SMEM_MAX_BYTES
from .swizzle import SWIZZLE_32B, SWIZZLE_64B, SWIZZLE_128B

__all__ = ["MAX_RANK", "MAX_BOX", "MAX_BOX_BYTES", "GLOBAL_ALIGN", "STRIDE_ALIGN", "STRIDE_LIMIT", "DIM_LIMIT", "INNER_BOX_ALIGN",
           "SMEM_ALIGN", "TX_LIMIT", "TmaSwizzle", "TMA_SWIZZLES", "tma_swizzle_of_bytes", "DATA_TYPES",
           "L2_PROMOTION_128B", "OOB_FILL_NONE", "INTERLEAVE_NONE", "TmaDirection", "tma_ptx", "TMA_SASS",
           "TMA_TARGETS", "MAX_MULTICAST", "ReduceOp", "REDUCE_TYPES", "OOB_FILL_NAN",
           "NAN_FILL_UNIT", "NAN_FILL_TYPES", "OobFill", "COORD_MIN", "COORD_MAX", "FTZ_DATA_TYPES", "TF32_DATA_TYPES",
           "FTZ_DATA_TYPE_CODES", "TF32_LOAD_NAN", "STORE_UNIT", "TENSOR_MAP_BYTES", "tensormap_replace_ptx", "TENSORMAP_PUBLISH_PTX",
           "TENSORMAP_ACQUIRE_PTX", "L2Promotion", "L2_PROMOTIONS", "l2_promotion_code", "BOX_START_UNIT"]

MAX_RANK = 5                  # tensorRank 1..5
MAX_BOX = 256                 # boxDim[i] 1..256
GLOBAL_ALIGN = 16             # the global address (32 with interleave, not used here)
STRIDE_ALIGN = 16             # every globalStrides entry, in bytes
STRIDE_LIMIT = 1 << 40        # globalStrides[i] < 2^40
DIM_LIMIT = 1 << 32           # 1 <= globalDim[i] <= 2^32
INNER_BOX_ALIGN = 16          # boxDim[0] * element bytes, without interleave
SMEM_ALIGN = 128              # a box's shared-memory address (CUDA Programming Guide, TMA alignment table)
MAX_MULTICAST = 16           # ctaMask is 16 bits: one per CTA rank of the cluster
#: The most bytes one box may have: a box lands in (or leaves) one CTA's shared memory, 227 KiB on sm_90. The H200's
#: driver refused boxes of 256 KiB (256 x 256 f32, 256 x 256 x 4 u8) and 256^5 u8 (docs/tma.md); where between
#: the largest box seen accepted and 256 KiB its own limit lies is probed by the encode case of
#: ``python -m tools tma_coordinates``.
MAX_BOX_BYTES = SMEM_MAX_BYTES
TX_LIMIT = (1 << 20) - 1      # an mbarrier phase's transaction count (PTX #parallel-synchronization-and-
#                               communication-instructions-mbarrier)
COORD_MIN, COORD_MAX = -(1 << 31), (1 << 31) - 1   # tensorCoords are .s32 (PTX #tensor-tiled-mode)
STORE_UNIT = 16               # a store writes global memory in 16-byte units (measured on the H200, docs/tma.md)
#: A box's start along tensor-map dimension 0, in bytes, is a multiple of this: the H200 raised an illegal-instruction
#: exception for loads, stores, reductions and prefetches starting between (docs/tma.md,
#: docs/runs/tma/tma-h200-coords.jsonl).
BOX_START_UNIT = 16

#: The targets that have cp.async.bulk.tensor (sm_90 and later).
TMA_TARGETS = ("sm_90a", "sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f")

TmaDirection = Literal["load", "store", "prefetch"]
ReduceOp = Literal["add", "min", "max", "inc", "dec", "and", "or", "xor"]

#: cp.reduce.async.bulk.tensor: the element types each operation takes (PTX ISA
#: #data-movement-and-conversion-instructions-cp-reduce-async-bulk-tensor).
REDUCE_TYPES: dict[ReduceOp, tuple[str, ...]] = {
    "add": ("u32", "i32", "u64", "f32", "f16", "bf16"), "min": ("u32", "i32", "u64", "i64", "f16", "bf16"),
    "max": ("u32", "i32", "u64", "i64", "f16", "bf16"), "inc": ("u32",), "dec": ("u32",),
    "and": ("u32", "i32", "u64", "i64"), "or": ("u32", "i32", "u64", "i64"), "xor": ("u32", "i32", "u64", "i64")}


@attrs.frozen
class TmaSwizzle:
    """A ``CUtensorMapSwizzle`` mode: its enum value, the byte-address swizzle it applies (CuTe's
    ``Swizzle<B,4,3>``), the widest inner box row it takes, and how often the pattern repeats."""

    name: str
    code: int
    byte_swizzle: Swizzle | None
    span: int                 # the most bytes boxDim[0] * element bytes may have (a row of the pattern)
    repeat: int               # bytes after which the pattern repeats (a buffer aligned to it has base offset 0)

    def row_pitch(self, row_bytes: int) -> int:
        """Bytes from one box row (``boxDim[0]`` elements) to the next in shared memory: the row itself unswizzled;
        under a swizzle a whole row of the pattern, also when the box's row is narrower (the CUDA Programming
        Guide: shared memory must then hold the full swizzle width per row) [inferred, docs/tma.md]. The pattern
        then XORs the absolute address (PTX ISA #tensor-swizzling-modes: the base offset is (dstMem / 128) %
        the rows of the pattern)."""
        return row_bytes if self.byte_swizzle is None else self.span


TMA_SWIZZLES = (
    TmaSwizzle("none", 0, None, 1 << 30, 16),
    TmaSwizzle("32B", 1, SWIZZLE_32B, 32, 256),
    TmaSwizzle("64B", 2, SWIZZLE_64B, 64, 512),
    TmaSwizzle("128B", 3, SWIZZLE_128B, 128, 1024),
)


def tma_swizzle_of_bytes(sw: Swizzle | None) -> TmaSwizzle | None:
    """The TMA mode whose byte-address swizzle is exactly ``sw`` (all of B, M and S), or None."""
    for mode in TMA_SWIZZLES:
        if mode.byte_swizzle == sw:
            return mode
    return None


#: CUtensorMapDataType by element type (the driver's enum; fp8 and the scale types travel as UINT8).
DATA_TYPES = {"u8": 0, "i8": 0, "f8e4m3": 0, "f8e5m2": 0, "ue8m0": 0, "ue4m3": 0, "u16": 1, "i16": 1, "u32": 2,
              "i32": 3, "u64": 4, "i64": 5, "f16": 6, "f32": 7, "f64": 8, "bf16": 9, "tf32": 11}
L2Promotion = Literal["none", "64B", "128B", "256B"]
#: CUtensorMapL2promotion: how much L2 fetches from DRAM around a miss (a hint; it changes no byte copied).
L2_PROMOTIONS: dict[L2Promotion, int] = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
#: The converting map types (CUDA driver API, CUtensorMapDataType): TFLOAT32 (11) and TFLOAT32_FTZ (12) round each
#: loaded f32 to tf32, FLOAT32_FTZ (10) and TFLOAT32_FTZ name the flush-to-zero forms (``ftz=True``). Measured on the
#: H200 (docs/tma.md, docs/runs/tma/tma-h200-coords-run1.jsonl): the rounding is to nearest even at mantissa bit 13
#: (dtypes.TF32_MASK: 10 mantissa bits kept; subnormals rounded too, the largest finite value to infinity,
#: infinities unchanged), every NaN becomes ``TF32_LOAD_NAN``, and the FTZ forms flush nothing a load writes (their
#: images equal the plain types'); a store through any of them copies the bytes unchanged.
FTZ_DATA_TYPES = {"f32": 10, "tf32": 12}
FTZ_DATA_TYPE_CODES = (10, 12)
TF32_DATA_TYPES = (11, 12)
#: What a TFLOAT32 map loads for any NaN, whatever its sign and payload: the canonical NaN 0x7FFFFFFF with the 13
#: bits tf32 drops cleared [inferred from run 1's differing-byte counts; the probe's next run records every element].
TF32_LOAD_NAN = 0x7FFFE000
L2_PROMOTION_128B = 2         # CU_TENSOR_MAP_L2_PROMOTION_L2_128B, what CuTe uses


def l2_promotion_code(value: object, who: str) -> int:
    """The ``CUtensorMapL2promotion`` of a plan's ``l2_promotion`` option, or a PlanError naming the choices."""
    if value not in L2_PROMOTIONS:
        raise PlanError(f"{who}: l2_promotion={value!r}: a tensor map promotes L2 fills by "
                        f"{', '.join(map(repr, L2_PROMOTIONS))} (CUtensorMapL2promotion)")
    return L2_PROMOTIONS[value]
OOB_FILL_NONE = 0             # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements load as zeros
OOB_FILL_NAN = 1              # ..._NAN_REQUEST_ZERO_FMA: floating-point types only
#: What the NaN fill writes: this 16-bit NaN in every 2-byte unit of an out-of-bounds element, whatever its type
#: (f16, bf16, f32, tf32, f64 measured on the H200, docs/runs/tma/tma-h200-nan-fill.jsonl).
NAN_FILL_UNIT = bytes.fromhex("f77f")
NAN_FILL_TYPES = ("f16", "bf16", "f32", "tf32", "f64")
OobFill = Literal["zero", "nan"]
INTERLEAVE_NONE = 0


def tma_ptx(direction: TmaDirection, rank: int, multicast: bool = False, reduce: ReduceOp | None = None,
            cache_hint: bool = False, mode: str = "tile") -> str:
    """The instruction in load mode ``mode`` (``tile``; ``im2col`` and the sm_100a modes in their own modules): a
    load completing on an mbarrier (with ``multicast``, written to and signalled in every CTA of a mask), a store
    (with ``reduce``, a reduction into global memory) completing in a bulk group, a prefetch; ``cache_hint`` adds
    ``.L2::cache_hint`` (a createpolicy operand last, PTX ISA #data-movement-and-conversion-instructions-createpolicy)."""
    hint = CACHE_HINT if cache_hint else ""
    if reduce is not None:
        return f"cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.{reduce}.{mode}.bulk_group{hint}"
    if direction == "load":
        return (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.{mode}.mbarrier::complete_tx::bytes"
                + (".multicast::cluster" if multicast else "") + hint)
    if direction == "prefetch":
        return f"cp.async.bulk.prefetch.tensor.{rank}d.L2.global.{mode}{hint}"
    return f"cp.async.bulk.tensor.{rank}d.global.shared::cta.{mode}.bulk_group{hint}"


#: The SASS opcode each direction assembles to (ptxas 13, sm_90a and sm_100a).
TMA_SASS = {"load": "UTMALDG", "store": "UTMASTG", "prefetch": "UTMAPF"}


#: A tensor map's size (CUDA driver API, CUtensorMap: 16 quadwords), what tensormap.cp_fenceproxy copies.
TENSOR_MAP_BYTES = 128
#: Publishing a map edited in shared memory: copy it to global memory and release it to the tensormap proxy, by a
#: whole warp (PTX ISA #tensormap-instructions-tensormap-cp-fenceproxy; sm_90).
TENSORMAP_PUBLISH_PTX = ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
                         f"[%0], [%1], {TENSOR_MAP_BYTES};")
#: Before the first copy through a map another thread of the GPU published (PTX ISA, fence.proxy.tensormap).
TENSORMAP_ACQUIRE_PTX = f"fence.proxy.tensormap::generic.acquire.gpu [%0], {TENSOR_MAP_BYTES};"


def tensormap_replace_ptx(field: str) -> str:
    """``tensormap.replace`` of one field of a tile-mode map held in shared memory (PTX ISA
    #tensormap-instructions-tensormap-replace; sm_90a): the address is 64-bit, dims 32-bit, strides 64-bit bytes."""
    width = "b64" if field in ("global_address", "global_stride") else "b32"
    return f"tensormap.replace.tile.{field}.shared::cta.b1024.{width}"
