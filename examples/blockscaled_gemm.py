"""A complete block-scaled GEMM, ``D = (A * SFA) (B * SFB)^T`` (f32 D), from pycute plans and header helpers only:
no hand-written ``asm``, and every number in the kernel text is a plan's, put there by this file. MXF8
(kind::mxf8f6f4: E4M3 elements, one UE8M0 SF per 32 K) or NVFP4 (kind::mxf4nvf4: packed E2M1, one UE4M3 SF per
16 K); cta_group 1 (a CTA per 128 x 256 tile of D) or 2 (a CTA pair per 256 x 256 tile, the even CTA issuing the
pair's MMAs); M, N and K need not be multiples of the tile. docs/blockscaled-gemm.md walks through it.

Warp roles, per CTA (192 threads):

* warp 0, the producer: one thread arms stage ``kb % STAGES``'s "full" mbarrier with the stage's bytes and loads
  k-block ``kb`` into it once the MMA has freed it: A's and B's tiles with TMA plans (rows and K past the array
  zero-filled), SFA's and SFB's stage with bulk-copy plans from the packed SF arrays (``pack_scale_factors``).
* warp 1, the MMA warp (in the even CTA of a pair): waits for the stage, copies its SFs into TMEM with tcgen05.cp
  plans (each SF where ``tcgen05.mma ... block_scale`` reads it: ``check_scale_factor_copy`` on every stage),
  issues the MMA plan's k-block (SF ids and columns per instruction are the plan's) and commits the stage back to
  the producers. In the odd CTA of a pair it relays: once its own stage has landed it arrives on the even CTA's.
* warps 2-5, the epilogue: after the last MMA's commit each reads its lane quadrant of the accumulator, 32 columns
  at a time, with a tcgen05.ld plan that takes the chunk at run time, and stores what lies inside D.

``python examples/blockscaled_gemm.py`` prints the plans and the sm_100a SASS counts;
examples/blockscaled_gemm_check.py checks the compiled kernel without a GPU (PTX interpreter and emulator).
"""
from __future__ import annotations

from typing import Literal

import attrs
import numpy as np

import pycute as pc
from pycute import Layout
from pycute.arch.sm100.tmem import CELL_BITS, check_cta_group
from pycute.basis import basis_get
from pycute.compile.runtime import tensor_map_bytes
from pycute.mma import check_scale_factor_copy, scale_factor_smem, scale_factor_tensor
from pycute.sim.operand import reference_mma
from pycute.arch.sm100.mma import K_BYTES as MMA_K_BYTES
from pycute.sim.verify_mma import exact_codes, exact_sf_codes, sf_power_code
from pycute.tensor.values import layout_values, smem_element_offsets

Kind = Literal["mxf8", "nvfp4"]

STAGES = 4
TILE_M = 128          # rows of A and of D per CTA
TILE_N = 256          # the MMA's N: columns of D per tile (B's rows, split over a pair)
BLOCK_K_BYTES = 128   # K bytes per k-block: one 128B-swizzle row of A and B
EPILOGUE_COLUMNS = 32
WARPS = 6             # producer, MMA, four epilogue warps


@attrs.frozen
class Format:
    """A block-scaled format: the MMA kind, the element type, the SF type and scale vector (SFs per MMA and row)."""

    kind: str
    dtype: pc.DType
    sf_type: str
    scale_vec: int

    @property
    def block_k(self) -> int:
        """Elements of K per k-block (BLOCK_K_BYTES of them)."""
        return 8 * BLOCK_K_BYTES // self.dtype.bits


FORMATS = {"mxf8": Format("mxf8f6f4", pc.f8e4m3, "ue8m0", 1), "nvfp4": Format("mxf4nvf4", pc.f4e2m1, "ue4m3", 4)}


def stage_bytes(sf) -> int:
    """Bytes of one SF stage: the staging (scale_factor_smem) has no holes."""
    return sf.rows * sf.mmas * sf.scale_vec


def ring_bytes(ring: pc.SmemTensor) -> int:
    """Shared bytes of a ring of stages, whole KiB."""
    return -(-(int(layout_values(ring.layout).max()) + 1) * ring.bits // 8 // 1024) * 1024


def packed_sf_array(sf, row_tiles: int, k_blocks: int) -> pc.GlobalTensor:
    """The packed SF array as (stage bytes, k-block, row tile): every stage one contiguous run, so a bulk copy per
    stage moves it."""
    size = stage_bytes(sf)
    return pc.make_global_tensor(pc.u8, Layout((size, k_blocks, row_tiles), (1, size, size * k_blocks)))


def pack_scale_factors(codes: np.ndarray, sf, row_tiles: int, k_blocks: int, fill: int) -> np.ndarray:
    """``codes`` (rows x SFs along K) as the packed array: stage (tile, k-block) holds its rows' and k-block's SFs
    where ``scale_factor_smem`` places them (the blocked SF layout); rows and SFs past ``codes`` are ``fill``."""
    slots, size = sf.mmas * sf.scale_vec, stage_bytes(sf)
    offsets = smem_element_offsets(scale_factor_smem(sf))           # index row + rows * slot -> byte
    out = np.full((row_tiles, k_blocks, size), fill, dtype=np.uint8)
    for t in range(row_tiles):
        for kb in range(k_blocks):
            block = np.full((sf.rows, slots), fill, dtype=np.uint8)
            part = codes[t * sf.rows:(t + 1) * sf.rows, kb * slots:(kb + 1) * slots]
            block[:part.shape[0], :part.shape[1]] = part
            out[t, kb, offsets] = block.T.reshape(-1)
    return out.reshape(-1)


def _check_epilogue_fragment(plan) -> None:
    """The kernel stores register v of epilogue thread t (32 * quadrant + lane) as row t, column v of the chunk:
    refuse a plan whose fragment says otherwise."""
    want = Layout((TILE_M, EPILOGUE_COLUMNS), (1, TILE_M))
    if not np.array_equal(layout_values(plan.fragment), layout_values(want)):
        raise pc.PlanError(f"the epilogue's fragment {plan.fragment!r} is not {want!r}")


class BlockScaledGemm:
    """The kernel for ``kind`` ("mxf8" / "nvfp4"), ``cta_group`` and one problem (M x K A, N x K B, both K-major):
    its plans, its CUDA source, its inputs and the reference output."""

    def __init__(self, kind: Kind = "mxf8", cta_group: int = 1, m: int = 256, n: int = 256, k: int = 512):
        if kind not in FORMATS:
            raise pc.PlanError(f"BlockScaledGemm: kind is one of {', '.join(FORMATS)}, not {kind!r}")
        self.kind, self.format = kind, FORMATS[kind]
        self.cta_group, self.m, self.n, self.k = check_cta_group(cta_group), m, n, k
        f, g = self.format, self.cta_group
        self.k_blocks = -(-k // f.block_k)
        self.grid = (-(-m // (TILE_M * g)) * g, -(-n // TILE_N))        # (CTAs along M, tiles along N)
        mmas = BLOCK_K_BYTES // MMA_K_BYTES                              # MMAs per k-block
        self.sfa = scale_factor_tensor(f.kind, TILE_M, mmas, f.scale_vec, cta_group=g)
        self.sfb = scale_factor_tensor(f.kind, TILE_N, mmas, f.scale_vec, cta_group=g)
        self._rings()
        self._loads()
        self._tmem()

    def _rings(self) -> None:
        """The shared-memory rings: A, B (this CTA's half of B's rows in a pair), SFA, SFB."""
        f, g, dyn = self.format, self.cta_group, pc.dynamic("stage")
        self.a_ring = pc.make_stages(pc.kmajor_smem_tensor(f.dtype, TILE_M, f.block_k, "128B"), STAGES)
        self.b_ring = pc.make_stages(pc.kmajor_smem_tensor(f.dtype, TILE_N // g, f.block_k, "128B"), STAGES)
        self.sfa_ring, self.sfb_ring = scale_factor_smem(self.sfa, STAGES), scale_factor_smem(self.sfb, STAGES)
        self.a_smem, self.b_smem = self.a_ring[:, :, dyn], self.b_ring[:, :, dyn]
        rings = (self.a_ring, self.b_ring, self.sfa_ring, self.sfb_ring)
        sizes = [ring_bytes(r) for r in rings]
        self.offsets = tuple(int(x) for x in np.cumsum([0] + sizes))   # A, B, SFA, SFB, end

    def _loads(self) -> None:
        """TMA plans of A's and B's tiles, bulk plans of the SF stages (flat views of the SF rings)."""
        f, dyn = self.format, pc.dynamic("stage")
        self.load_a = pc.make_tma_copy(self.a_smem, pc.make_global_tensor(f.dtype, Layout((self.m, self.k),
                                                                                         (self.k, 1))))
        self.load_b = pc.make_tma_copy(self.b_smem, pc.make_global_tensor(f.dtype, Layout((self.n, self.k),
                                                                                         (self.k, 1))))
        self.sf_loads = []
        for sf, tiles in ((self.sfa, self.grid[0]), (self.sfb, self.grid[1])):
            size = stage_bytes(sf)
            flat = pc.make_smem_tensor(pc.u8, Layout((size, 1, 1, STAGES), (1, size, size, size)))
            self.sf_loads.append(pc.make_bulk_copy(flat[:, :, :, dyn], packed_sf_array(sf, tiles, self.k_blocks)))
        self.expect_tx = self.load_a.expect_tx + self.load_b.expect_tx + sum(p.expect_tx for p in self.sf_loads)

    def _tmem(self) -> None:
        """The allocation (accumulator, SFA, SFB), the SF copies, the MMA and the epilogue."""
        f, g, dyn = self.format, self.cta_group, pc.dynamic("stage")
        self.alloc = pc.TmemAllocation(cta_group=g)
        self.acc = self.alloc.add(pc.f32, pc.mma_accumulator(pc.f32, TILE_M * g, TILE_N, g).layout,
                                  name="accumulator")
        # one SF region per stage: the copy of k-block kb + STAGES into a region waits (through the stage's empty
        # barrier) for MMA kb, which read it; tcgen05.mma -> tcgen05.cp is not a pipelined pair (PTX ISA
        # #tcgen05-memory-consistency-model-pipelined-instructions), so one shared region could be overwritten early
        rings = [pc.make_stages(sf.tensor, STAGES) for sf in (self.sfa, self.sfb)]
        sf_tmem = [self.alloc.add(pc.u8, r.layout, replica=r.replica, name=name)[:, :, dyn]
                   for r, name in zip(rings, ("sfa", "sfb"))]
        self.sf_columns = tuple(t.placement.column for t in sf_tmem)
        self.sf_stage_columns = tuple(basis_get(t.dynamic[0].stride, "TCol") * t.bits // CELL_BITS for t in sf_tmem)
        self.sf_copies = [pc.make_tiled_copy(t, ring[:, :, dyn], cta_group=g)
                          for t, ring in zip(sf_tmem, (self.sfa_ring, self.sfb_ring))]
        for plan, sf in zip(self.sf_copies, (self.sfa, self.sfb)):
            for stage in range(STAGES):
                check_scale_factor_copy(plan.at(stage=stage), sf)
        self.mma = pc.make_mma(self.acc, self.a_smem, self.b_smem, sfa=self.sfa, sfb=self.sfb, kind=f.kind,
                               scale_type=f.sf_type, cta_group=g)
        chunks = TILE_N // EPILOGUE_COLUMNS
        chunked = pc.composition(self.acc.layout, Layout((TILE_M, EPILOGUE_COLUMNS, chunks),
                                                         (1, TILE_M, TILE_M * EPILOGUE_COLUMNS)))
        self.epilogue = pc.make_tmem_copy(attrs.evolve(self.acc, layout=chunked)[:, :, pc.dynamic("chunk")])
        _check_epilogue_fragment(self.epilogue)

    @property
    def smem_bytes(self) -> int:
        return self.offsets[-1]

    def planned_counts(self) -> dict[str, int]:
        """Instructions of each family one CTA (the even one of a pair) issues for the whole tile."""
        kb = self.k_blocks
        return {"tma": kb * (len(self.load_a.instructions) + len(self.load_b.instructions)),
                "bulk": kb * sum(len(p.instructions) for p in self.sf_loads),
                "tcgen05.cp": kb * sum(len(p.instructions) for p in self.sf_copies),
                "tcgen05.mma": kb * len(self.mma.instructions),
                "tcgen05.ld": (TILE_N // EPILOGUE_COLUMNS) * len(self.epilogue.per_warp)}

    def source(self) -> str:
        """The kernel: the plans' generated functions, then ``blockscaled_gemm`` with one branch per warp role."""
        g, pair = self.cta_group, self.cta_group == 2
        functions = "\n".join([self.load_a.cuda("load_a"), self.load_b.cuda("load_b"),
                               self.sf_loads[0].cuda("load_sfa"), self.sf_loads[1].cuda("load_sfb"),
                               self.sf_copies[0].cuda("copy_sfa"), self.sf_copies[1].cuda("copy_sfb"),
                               self.mma.cuda("mma_k_block"), self.epilogue.cuda("read_chunk")])
        sync = "pycute_cluster_sync();" if pair else "__syncthreads();"
        return f"""{functions}
#define STAGES {STAGES}u

extern "C" __global__ void __launch_bounds__({32 * WARPS}, 1){" __cluster_dims__(2, 1, 1)" if pair else ""}
blockscaled_gemm(const pycute_tensor_map* map_a, const pycute_tensor_map* map_b, const unsigned char* sfa,
                 const unsigned char* sfb, float* d, int m, int n, int k_blocks) {{
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES], done;
  __shared__ unsigned tmem_slot;
  const unsigned warp = pycute_warp_index(), lane = threadIdx.x % 32u, rank = pycute_cluster_ctarank();
  const bool leader = {"(rank & 1u) == 0u" if pair else "true"};   // the CTA that issues the MMAs
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  if (threadIdx.x == 0) {{
    for (unsigned s = 0; s < STAGES; ++s) {{
      // the even CTA of a pair also counts the odd CTA's relay
      pycute_mbarrier_init(pycute_smem_address(&full[s]), {"leader ? 2u : 1u" if pair else "1u"});
      pycute_mbarrier_init(pycute_smem_address(&empty[s]), 1u);
    }}
    pycute_mbarrier_init(pycute_smem_address(&done), 1u);
  }}
  if (warp == 1) {{
    pycute_tmem_alloc<{g}>(pycute_smem_address(&tmem_slot), {self.alloc.columns}u);
    pycute_tmem_relinquish_alloc_permit<{g}>();
  }}
  pycute_tcgen05_fence_before_thread_sync();
  {sync}
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned tmem = tmem_slot;
  if (warp == 0) {{                      // the producer
{self._producer()}
  }} else if (warp == 1 && leader) {{    // the MMA warp
{self._mma_warp()}
  }} else if (warp == 1) {{              // the odd CTA of a pair: relay each landed stage to the even CTA
{self._relay()}
  }} else {{                             // the epilogue: warp w reads lane quadrant w % 4
{self._epilogue()}
  }}
  pycute_tcgen05_fence_before_thread_sync();
  {sync}                    // every MMA and read done, in both CTAs of a pair
  if (warp == 1) pycute_tmem_dealloc<{g}>(tmem, {self.alloc.columns}u);
}}
"""

    def _producer(self) -> str:
        a_at, b_at, sfa_at, sfb_at, _ = self.offsets
        return f"""    if (pycute_elect_one_sync()) {{
      pycute_tensormap_acquire(map_a);
      pycute_tensormap_acquire(map_b);
      #pragma unroll 1
      for (int kb = 0; kb < k_blocks; ++kb) {{
        const unsigned s = unsigned(kb) % STAGES, f = pycute_smem_address(&full[s]);
        if (kb >= int(STAGES))                 // the MMAs of k-block kb - STAGES have freed the stage
          pycute_mbarrier_wait_parity(pycute_smem_address(&empty[s]), (unsigned(kb) / STAGES - 1u) & 1u);
        pycute_mbarrier_arrive_expect_tx(f, load_a_expect_tx + load_b_expect_tx + load_sfa_expect_tx
                                            + load_sfb_expect_tx);
        load_a(map_a, base + {a_at}u, f, blockIdx.x, kb, s);
        load_b(map_b, base + {b_at}u, f, blockIdx.y * {self.cta_group}u + rank, kb, s);
        load_sfa(sfa, base + {sfa_at}u, f, 0, kb, blockIdx.x, s);
        load_sfb(sfb, base + {sfb_at}u, f, 0, kb, blockIdx.y, s);
      }}
    }}"""

    def _mma_warp(self) -> str:
        a_at, b_at, sfa_at, sfb_at, _ = self.offsets
        g = self.cta_group
        return f"""    #pragma unroll 1
    for (int kb = 0; kb < k_blocks; ++kb) {{
      const unsigned s = unsigned(kb) % STAGES;
      pycute_mbarrier_wait_parity(pycute_smem_address(&full[s]), (unsigned(kb) / STAGES) & 1u);
      pycute_tcgen05_fence_after_thread_sync();
      copy_sfa(buf + {sfa_at}u, tmem, s);          // the whole warp; each copy function elects the same lane
      copy_sfb(buf + {sfb_at}u, tmem, s);
      if (pycute_elect_one_sync()) {{           // tcgen05.cp -> tcgen05.mma: in issue order (a pipelined pair)
        mma_k_block(base + {a_at}u, base + {b_at}u, tmem,
                    tmem + {self.sf_columns[0]}u + s * {self.sf_stage_columns[0]}u,      // stage s's SF regions
                    tmem + {self.sf_columns[1]}u + s * {self.sf_stage_columns[1]}u, kb > 0 ? 1u : 0u, s);
        pycute_tcgen05_commit<{g}>(pycute_smem_address(&empty[s]));     // frees the stage
      }}
      __syncwarp();
    }}
    if (pycute_elect_one_sync()) pycute_tcgen05_commit<{g}>(pycute_smem_address(&done));
    __syncwarp();"""

    @staticmethod
    def _relay() -> str:
        return """    #pragma unroll 1
    for (int kb = 0; kb < k_blocks; ++kb) {
      const unsigned s = unsigned(kb) % STAGES;
      pycute_mbarrier_wait_parity(pycute_smem_address(&full[s]), (unsigned(kb) / STAGES) & 1u);
      if (lane == 0u) pycute_mbarrier_arrive_remote(pycute_smem_address(&full[s]), rank & ~1u);
      __syncwarp();
    }"""

    def _epilogue(self) -> str:
        return f"""    pycute_mbarrier_wait_parity(pycute_smem_address(&done), 0u);
    pycute_tcgen05_fence_after_thread_sync();
    const int row = int(blockIdx.x) * {TILE_M} + int(32u * (warp % 4u) + lane);
    #pragma unroll 1
    for (unsigned chunk = 0; chunk < {TILE_N // EPILOGUE_COLUMNS}u; ++chunk) {{
      unsigned r[{EPILOGUE_COLUMNS}];
      read_chunk(tmem, r, chunk);
      const int col = int(blockIdx.y) * {TILE_N} + int(chunk) * {EPILOGUE_COLUMNS};
      if (row < m)
        for (int j = 0; j < {EPILOGUE_COLUMNS}; ++j)
          if (col + j < n) d[(long long)row * n + col + j] = __uint_as_float(r[j]);
    }}"""

    def compile(self, arch: str = "sm_100a", soft: bool = False):
        """The cubin; ``soft`` builds the header's tcgen05 model, with a TMEM image for every CTA of the grid."""
        ctas = self.grid[0] * self.grid[1]
        options = ("-DPYCUTE_SOFT_TCGEN05", f"-DPYCUTE_SOFT_TMEM_CTAS={ctas}") if soft else ()
        return pc.compile.compile_cuda(self.source(), arch=arch, options=options)

    def inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Element codes of A (M x K) and B (N x K) and SF codes (rows x SFs along K), exact in f32: every product
        and partial sum of the reference is exactly representable, so the comparison is bit for bit."""
        rng = np.random.default_rng(seed)
        f = self.format
        vector = f.block_k // (self.sfa.mmas * f.scale_vec)                  # elements per SF
        sfs = -(-self.k // vector)
        bits = f.dtype.bits
        return {"a": exact_codes(f.dtype.name, bits, rng, (self.m, self.k)),
                "b": exact_codes(f.dtype.name, bits, rng, (self.n, self.k)),
                "sfa": exact_sf_codes(f.sf_type, rng, (self.m, sfs)),
                "sfb": exact_sf_codes(f.sf_type, rng, (self.n, sfs))}

    def reference(self, x: dict[str, np.ndarray]) -> np.ndarray:
        """D from the codes alone (K padded with zeros to whole SF vectors)."""
        f = self.format
        vector = f.block_k // (self.sfa.mmas * f.scale_vec)
        pad = x["sfa"].shape[1] * vector - self.k
        a, b = (np.pad(x[t], ((0, 0), (0, pad))) for t in ("a", "b"))
        return reference_mma(a, b, f.dtype.name, f.dtype.name, x["sfa"], x["sfb"], f.sf_type, vector)

    def _operand_bytes(self, codes: np.ndarray) -> np.ndarray:
        """Row-major K-major bytes of element codes (two 4-bit codes to a byte, the lower K in the low nibble)."""
        if self.format.dtype.bits == 8:
            return codes.astype(np.uint8).reshape(-1)
        c = codes.astype(np.uint8)
        return (c[:, 0::2] | (c[:, 1::2] << 4)).reshape(-1)

    def arrays(self, x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The kernel's global inputs as bytes: A and B row-major, SFA and SFB packed."""
        fill = sf_power_code(self.format.sf_type, 0)        # 1.0 pads past M, N and K (the elements there are 0)
        return {"a": self._operand_bytes(x["a"]), "b": self._operand_bytes(x["b"]),
                **{t: pack_scale_factors(x[t], sf, tiles, self.k_blocks, fill)
                   for t, sf, tiles in (("sfa", self.sfa, self.grid[0]), ("sfb", self.sfb, self.grid[1]))}}

    def run(self, gpu, arch: str = "sm_90a", soft: bool = True, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Launch on ``gpu`` (``pycute.compile.runtime.Gpu``): ``(D as the kernel wrote it, the reference)``."""
        x = self.inputs(seed)
        data = self.arrays(x)
        d_a, d_b = gpu.upload(data["a"]), gpu.upload(data["b"])
        maps = [gpu.upload(np.frombuffer(tensor_map_bytes(p.tensor_map.encode(int(buf.handle))), dtype=np.uint8))
                for p, buf in ((self.load_a, d_a), (self.load_b, d_b))]
        sfs = [gpu.upload(data[t]) for t in ("sfa", "sfb")]
        d_d = gpu.upload(np.full(self.m * self.n, np.nan, dtype=np.float32))
        kernel = gpu.kernel(self.compile(arch, soft), "blockscaled_gemm")
        gpu.launch(kernel, *maps, *sfs, d_d, np.int32(self.m), np.int32(self.n), np.int32(self.k_blocks),
                   grid=self.grid, block=32 * WARPS, dynamic_smem=self.smem_bytes + 1024)
        got = gpu.download(d_d, np.float32, self.m * self.n).reshape(self.m, self.n)
        return got, self.reference(x).astype(np.float32)


def main() -> None:
    for kind, group in (("mxf8", 1), ("nvfp4", 2)):
        gemm = BlockScaledGemm(kind, group, m=300, n=520, k=1024)
        print(f"== {kind}, cta_group {group}: grid {gemm.grid}, {gemm.k_blocks} k-blocks, {gemm.smem_bytes} B shared, "
              f"{gemm.alloc.columns} TMEM columns")
        print(gemm.mma.explain())
        sass = gemm.compile("sm_100a").histogram()
        print("sm_100a SASS:", {op: c for op, c in sorted(sass.items())
                                if op.startswith(("UTMALDG", "UBLKCP", "UTCCP", "UTC", "LDTM"))}, end="\n\n")


if __name__ == "__main__":
    main()
