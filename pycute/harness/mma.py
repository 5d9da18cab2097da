"""The MMA round trip: shared memory filled with A's and B's elements (exact values, through their tiles' layouts)
and, for a block-scaled plan, the SFs (copied into TMEM by tcgen05.cp plans of the SF tensors, as a GEMM's SF
pipeline does), one thread issuing a make_mma plan's generated function (then tcgen05.commit), and every warp
reading its lane quadrant of D back with tcgen05.ld. On an sm_100a GPU the MMA is the hardware's; with ``-DPYCUTE_SOFT_TCGEN05``
on the H200 it is the header's software model. D must equal the emulator's for the same image."""
from __future__ import annotations

import attrs
import numpy as np

from .common import tmem_readback
from ..codegen.mma import emit_mma
from ..codegen.tcgen05_cp import emit_device_function
from ..copy.tcgen05_cp.planner import make_tiled_copy
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..arch.sm100.mma import MMA_KINDS
from ..mma.scale import scale_factor_smem
from ..codegen.tcgen05_ldst import ldst_helper
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..errors import CompileError
from ..mma.plan import MmaPlan
from ..mma.tmem_operand import TmemOperand
from ..tensor.canonical import kmajor_smem_tensor
from ..sim.emulator import Sm100Emulator
from ..sim.verify_mma import exact_codes, exact_sf_codes, write_tile
from ..tensor.values import smem_bytes_needed

__all__ = ["MmaRoundTrip"]

_CHUNK = 8
_SF_FROM = 256                    # the SF tensors go from here (or past an A in TMEM), 32 columns each


def _sf_copy(sf) -> Tcgen05CpPlan:
    """The tcgen05.cp of a SF tensor from its shared-memory staging (scale_factor_smem)."""
    return make_tiled_copy(sf.tensor, scale_factor_smem(sf))


@attrs.frozen
class MmaRoundTrip:
    """One tile of ``plan`` on a GPU, D read back. An A in TMEM is staged in shared memory (a K-major tile) and
    copied into its columns with a tcgen05.cp plan first, as the SFs are."""

    plan: MmaPlan

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, MmaPlan):
            raise CompileError("MmaRoundTrip: an MmaPlan (make_mma)")

    @property
    def sf_copies(self) -> tuple[Tcgen05CpPlan, ...]:
        """The SFA and SFB copies (none for a dense kind)."""
        p = self.plan
        return () if p.sfa is None or p.sfb is None else (_sf_copy(p.sfa), _sf_copy(p.sfb))

    @property
    def a_copy(self) -> Tcgen05CpPlan | None:
        """The tcgen05.cp of an A in TMEM from its staging tile (None for A in shared memory)."""
        a = self.plan.a
        if not isinstance(a, TmemOperand):
            return None
        return make_tiled_copy(a.tensor, kmajor_smem_tensor(a.tensor.dtype, a.mn, a.k, "none"))

    @property
    def a_tile(self):
        """A's shared tile: the MMA's operand, or the staging of an A in TMEM."""
        return self.plan.a.tensor if self.a_copy is None else self.a_copy.src

    @property
    def sf_columns(self) -> tuple[int, int]:
        """The SFA and SFB tensors' columns: from 256, past an A in TMEM."""
        a = self.plan.a
        end = a.column + a.k * a.tensor.bits // 32 if isinstance(a, TmemOperand) else 0
        first = max(_SF_FROM, -(-end // 32) * 32)
        return first, first + 32

    @property
    def regions(self) -> tuple[int, ...]:
        """Byte offsets of A, B, SFA, SFB in shared memory (each region a whole KiB)."""
        sizes = [smem_bytes_needed(self.a_tile), smem_bytes_needed(self.plan.b.tensor)]
        sizes += [smem_bytes_needed(c.src) for c in self.sf_copies]
        out, at = [], 0
        for size in sizes:
            out.append(at)
            at += -(-size // 1024) * 1024
        return tuple(out + [at])

    @property
    def a_bytes(self) -> int:
        return self.regions[1]

    @property
    def smem_bytes(self) -> int:
        return self.regions[-1]

    @property
    def columns(self) -> int:
        n = self.plan.shape[1]
        return 512 if self.sf_copies or self.a_copy else max(32, 1 << (self.plan.d_column + n - 1).bit_length())

    def image(self, seed: int = 0) -> np.ndarray:
        """Shared memory's bytes: A's tile at 0, B's at ``a_bytes``."""
        rng = np.random.default_rng(seed)
        m, n, k = self.plan.shape
        image = np.zeros(self.smem_bytes, dtype=np.uint8)
        for tile, base, rows in ((self.a_tile, 0, m), (self.plan.b.tensor, self.a_bytes, n)):
            write_tile(image, base, tile, exact_codes(tile.dtype.name, tile.bits, rng, (rows, k)))
        for copy, base in zip(self.sf_copies, self.regions[2:]):
            rows, slots = copy.src.layout[0].size(), copy.src.layout[1].size()
            write_tile(image, base, copy.src, exact_sf_codes(self.sf_type, rng, (rows, slots)).astype(np.uint64))
        return image

    @property
    def sf_type(self) -> str:
        """The SFs' type the instruction descriptor names (UE8M0 for a dense plan, whose image has none)."""
        code = self.plan.idesc.fields.get("scale_type")
        types = MMA_KINDS[self.plan.atom.kind].scale_types
        return next((t for t, v in types.items() if v == code), "ue8m0")

    def source(self) -> str:
        cols, n = self.columns, self.plan.shape[1]
        ld = ldst_helper("ld", _CHUNK)
        scaled = bool(self.sf_copies)
        cps = "".join(emit_device_function(c, f"sf_cp{i}") for i, c in enumerate(self.sf_copies))
        sf_calls = "".join(f"    sf_cp{i}(buf + {r}u, taddr + {col}u);\n"
                           for i, (r, col) in enumerate(zip(self.regions[2:4], self.sf_columns[:len(self.sf_copies)])))
        if self.a_copy is not None:
            cps += emit_device_function(self.a_copy, "a_cp")
            sf_calls = "    a_cp(buf, taddr);\n" + sf_calls
        sf_args = f"taddr + {self.sf_columns[0]}u, taddr + {self.sf_columns[1]}u, " if scaled else ""
        a_arg = "" if self.a_copy is not None else "base, "
        return emit_mma(self.plan, "tile_mma") + cps + f"""
extern "C" __global__ void __launch_bounds__(128, 1) mma_roundtrip(const unsigned char* image, unsigned* out) {{
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long done;
  const unsigned tid = threadIdx.x, warp = pycute_warp_index(), lane = tid % 32u;
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned m = pycute_smem_address(&done);
  for (unsigned i = tid; i < {self.smem_bytes}u; i += blockDim.x) buf[i] = image[i];
  if (warp == 0) {{
    pycute_tmem_alloc<1>(pycute_smem_address(&tmem_slot), {cols}u);
    pycute_tmem_relinquish_alloc_permit<1>();
  }}
  if (tid == 0) pycute_mbarrier_init(m, 1);
  pycute_fence_proxy_async_shared();     // the generic fill, before the MMA (async proxy) reads it
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned taddr = tmem_slot;
  if (warp == 0) {{                     // the SF copies (the whole warp; each elects a lane), then the MMAs
{sf_calls}    if (pycute_elect_one_sync()) {{
      tile_mma({a_arg}base + {self.a_bytes}u, taddr, {sf_args}0u);
      pycute_tcgen05_commit<1>(m);
    }}
  }}
  pycute_mbarrier_wait_parity(m, 0);
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned warp_taddr = taddr + ((PYCUTE_TMEM_QUADRANT_LANES * (warp % 4u)) << PYCUTE_TMEM_LANE_SHIFT);
{tmem_readback(ld, self.plan.d_column + n, cols, _CHUNK)}
}}
"""

    def compile(self, arch: str = "sm_100a", soft: bool = False) -> Compiled:
        return compile_cuda(self.source(), arch=arch, options=("-DPYCUTE_SOFT_TCGEN05",) if soft else ())

    def emulate(self, seed: int = 0) -> np.ndarray:
        """D (128 x N, float32 bits) the emulator says the kernel reads back."""
        emu = Sm100Emulator(smem_bytes=self.smem_bytes, fill_tmem=0)
        emu.write_smem(0, self.image(seed))
        col = emu.alloc(self.columns)
        if self.a_copy is not None:
            emu.run(self.a_copy.stream(0, col))
        for copy, region, sf_col in zip(self.sf_copies, self.regions[2:], self.sf_columns):
            emu.run(copy.stream(region, col + sf_col))
        smem_a = None if self.a_copy is not None else 0
        for issue in self.plan.stream(smem_a, self.a_bytes, col, col + self.sf_columns[0], col + self.sf_columns[1]):
            emu.mma(issue)
        n = self.plan.shape[1]
        return emu.ctas[0].tmem[:128, col + self.plan.d_column:col + self.plan.d_column + n].copy()

    def run(self, gpu: Gpu, seed: int = 0, arch: str = "sm_90a", soft: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(got, want)``: D as the GPU reads it back and as the emulator says."""
        gpu = check_gpu(gpu)
        words = 128 * self.columns
        out = gpu.run(self.compile(arch, soft).cubin, "mma_roundtrip", grid=1, block=128,
                      dynamic_smem=self.smem_bytes + 1024, inputs=self.image(seed), out_words=words)
        n = self.plan.shape[1]
        got = out.reshape(128, self.columns)[:, self.plan.d_column:self.plan.d_column + n]
        return got, self.emulate(seed)
