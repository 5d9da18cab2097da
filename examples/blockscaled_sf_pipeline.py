"""The scale-factor path of a block-scaled GEMM (MXF8, or NVFP4), composed from pycute: no hand-written tcgen05 PTX.

* One TMEM allocation holds the accumulator (128 lanes x 256 f32 columns), SFA (128 rows) and SFB (256 rows), each
  SF tensor placed where ``tcgen05.mma ... block_scale`` reads it (``pycute.mma.scale_factor_tensor``: replicated
  to all four lane quadrants, a column per 32 rows, the SF id as the byte) and every copy checked against that
  placement (``check_scale_factor_copy``). A k-block stage is 4 MMAs of kind::mxf8f6f4 (scale_vec::1X, SF ids
  0-3) or one of kind::mxf4nvf4 (scale_vec::4X, SF id 0).
* SFA and SFB sit in a 4-stage shared-memory pipeline (128 rows x 4 UE8M0 per k-block; DeepGEMM's layout: the 16
  bytes of row ``r`` hold the SF words of rows ``r, r+32, r+64, r+96``).
* Every k-block the MMA warp copies stage ``kb % 4`` with the generated functions, which take ``stage`` at run
  time; the planner checked all four stages. The copies' completion is a one-stage pipeline (``make_pipeline``: the
  MMA warp's ``tcgen05.commit`` fills it, every thread waits, a CTA / cluster barrier releases it), whose state
  carries the phase bit. The rest of the protocol (alloc, fences, tcgen05.ld readback, dealloc) is
  ``pycute/sm100.cuh``.
* cta_group 2 by default: a 2-CTA cluster, the even CTA issues, each CTA copies its own shared memory into its
  own TMEM, and the commit signals both CTAs.

The kernel reads the SFs back each k-block and stores them, so a test can check every stage against what the
layouts say. ``python examples/blockscaled_sf_pipeline.py`` prints the plans and the sm_100a SASS summary.
"""
from __future__ import annotations

import numpy as np

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.codegen.tcgen05_ldst import ldst_helper
from pycute.mma import check_scale_factor_copy, scale_factor_tensor
from pycute.pipeline import Consumer, Producer, make_pipeline

STAGES = 4
K_BLOCKS = 8          # two passes over the pipeline
SF_PER_ROW = 4        # UE8M0 scale factors per row per k-block (K = 128, one per 32)


def sf_smem(sf):
    """A pipeline of SF stages (``scale_factor_smem``): in each 128-row chunk (512 B) row ``r = 32 i + l`` sits at
    byte ``16 l + 4 i``, one 16-byte line per lane of a ``32x128b.warpx4`` copy."""
    return pc.scale_factor_smem(sf, STAGES)[:, :, pc.dynamic("stage")]


#: kind -> (MMAs per k-block stage, scale_vec): 4 UE8M0 bytes a row either way.
KINDS = {"mxf8f6f4": (4, 1), "mxf4nvf4": (1, 4)}


class SfPipeline:
    """The example for ``cta_group`` 1 or 2 and a block-scaled ``kind``: its allocation, plans (checked where the
    MMA reads the SFs), CUDA source and expected readback."""

    def __init__(self, cta_group: int = 2, kind: str = "mxf8f6f4"):
        self.cta_group, self.kind = cta_group, kind
        mmas, scale_vec = KINDS[kind]
        self.alloc = pc.TmemAllocation(cta_group=cta_group)
        self.acc = self.alloc.add(pc.f32, Layout((128, 256), (TLane, TCol)), name="accumulator")
        self.sf = {rows: scale_factor_tensor(kind, rows, mmas=mmas, scale_vec=scale_vec) for rows in (128, 256)}
        self.sfa = self.alloc.add(pc.u8, self.sf[128].tensor.layout, replica=self.sf[128].tensor.replica, name="sfa")
        self.sfb = self.alloc.add(pc.u8, self.sf[256].tensor.layout, replica=self.sf[256].tensor.replica, name="sfb")
        self.sfa_plan = pc.make_tiled_copy(self.sfa, sf_smem(self.sf[128]), cta_group=cta_group)
        self.sfb_plan = pc.make_tiled_copy(self.sfb, sf_smem(self.sf[256]), cta_group=cta_group)
        for plan, rows in ((self.sfa_plan, 128), (self.sfb_plan, 256)):
            for stage in range(STAGES):
                check_scale_factor_copy(plan.at(stage=stage), self.sf[rows])
        # the copies' completion: the MMA warp commits, all 128 threads of each CTA wait, a barrier releases
        self.landed = make_pipeline(consumer=Consumer("threads", 128, "sync"),
                                    producer=Producer("commit", "warp", cta_group=cta_group), stages=1,
                                    arch="sm_100a", name="sf")

    @property
    def ctas(self) -> int:
        return self.cta_group

    @property
    def read_columns(self) -> tuple[int, int]:
        """The 32-bit TMEM columns read back per lane: SFA's then SFB's."""
        return self.sfa.placement.width, self.sfb.placement.width

    def source(self) -> str:
        g = self.cta_group
        a_cols, b_cols = self.read_columns
        sfa_bytes, sfb_bytes = 128 * SF_PER_ROW, 256 * SF_PER_ROW
        functions = "\n".join([self.sfa_plan.cuda("copy_sfa"), self.sfb_plan.cuda("copy_sfb"), self.landed.cuda()])
        sync = "pycute_cluster_sync();" if g == 2 else "__syncthreads();"
        return f"""{functions}
#define STAGES {STAGES}u
#define K_BLOCKS {K_BLOCKS}u
#define SFA_BYTES {sfa_bytes}u
#define SFB_BYTES {sfb_bytes}u
#define READ_COLS {a_cols + b_cols}u

// Stage `stage` of both SF pipelines <- k-block `kb` of this CTA's SFs (ordinary stores; the async proxy that
// tcgen05.cp reads through sees them after pycute_fence_proxy_async_shared()).
__device__ void fill_stage(unsigned char* sfa, unsigned char* sfb, const unsigned char* sf, unsigned cta,
                           unsigned kb, unsigned stage) {{
  const unsigned char* src = sf + (cta * K_BLOCKS + kb) * (SFA_BYTES + SFB_BYTES);
  for (unsigned i = threadIdx.x; i < SFA_BYTES; i += blockDim.x) sfa[stage * SFA_BYTES + i] = src[i];
  for (unsigned i = threadIdx.x; i < SFB_BYTES; i += blockDim.x) sfb[stage * SFB_BYTES + i] = src[SFA_BYTES + i];
}}

extern "C" __global__ void __launch_bounds__(128, 1){" __cluster_dims__(2, 1, 1)" if g == 2 else ""}
sf_pipeline(const unsigned char* __restrict__ sf, unsigned* __restrict__ out) {{
  __shared__ __align__(1024) unsigned char sfa_smem[STAGES * SFA_BYTES];
  __shared__ __align__(1024) unsigned char sfb_smem[STAGES * SFB_BYTES];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long bars[sf_barrier_words];
  const unsigned warp = pycute_warp_index(), lane = threadIdx.x % 32u, cta = pycute_cluster_ctarank();
  const unsigned b = pycute_smem_address(bars);

  // TMEM and the barriers first, then a barrier, before any thread fills shared memory (racecheck otherwise takes
  // the mbarrier.init for a write to the fill's bytes: docs/sanitizer.md).
  if (warp == 0) {{
    pycute_tmem_alloc<{g}>(pycute_smem_address(&tmem_slot), {self.alloc.columns}u);
    pycute_tmem_relinquish_alloc_permit<{g}>();
  }}
  if (threadIdx.x == 0) sf_init(b);
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned tmem = tmem_slot;
  for (unsigned s = 0; s < STAGES; ++s) fill_stage(sfa_smem, sfb_smem, sf, cta, s, s);
  pycute_fence_proxy_async_shared();
  pycute_tcgen05_fence_before_thread_sync();
  {sync}
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned warp_tmem = tmem + ((PYCUTE_TMEM_QUADRANT_LANES * (warp % 4u)) << PYCUTE_TMEM_LANE_SHIFT);

  sf_state copied = sf_producer_start(), landed = sf_consumer_start();
#pragma unroll 1
  for (unsigned kb = 0; kb < K_BLOCKS; ++kb, copied.advance(), landed.advance()) {{
    const unsigned stage = kb % STAGES;
    // The MMA warp{" of the even CTA" if g == 2 else ""}: copy this k-block's SFs into TMEM and commit them.
    if (warp == 0{" && (cta & 1u) == 0u" if g == 2 else ""}) {{
      copy_sfa(sfa_smem, tmem, stage);
      copy_sfb(sfb_smem, tmem, stage);
      sf_producer_commit(b, copied);
    }}
    sf_consumer_wait(b, landed);
    pycute_tcgen05_fence_after_thread_sync();
    // Where tcgen05.mma ... block_scale would read them: every warp reads its own quadrant's replica.
    unsigned a[{a_cols}], b[{b_cols}];
    {ldst_helper("ld", a_cols)}(warp_tmem + {self.sfa.placement.column}u, a);
    {ldst_helper("ld", b_cols)}(warp_tmem + {self.sfb.placement.column}u, b);
    pycute_tcgen05_wait_ld();
    unsigned* row = out + ((cta * K_BLOCKS + kb) * 128u + 32u * (warp % 4u) + lane) * READ_COLS;
    for (unsigned j = 0; j < {a_cols}u; ++j) row[j] = a[j];
    for (unsigned j = 0; j < {b_cols}u; ++j) row[{a_cols}u + j] = b[j];
    // Every CTA has read this k-block's SFs before the stage is refilled and the next copy overwrites TMEM.
    pycute_tcgen05_fence_before_thread_sync();
    {sync}
    if (kb + STAGES < K_BLOCKS) {{
      fill_stage(sfa_smem, sfb_smem, sf, cta, kb + STAGES, stage);
      pycute_fence_proxy_async_shared();
    }}
    {sync}
    pycute_tcgen05_fence_after_thread_sync();
  }}
  pycute_tcgen05_fence_before_thread_sync();
  {sync}
  if (warp == 0) pycute_tmem_dealloc<{g}>(tmem, {self.alloc.columns}u);
}}
"""

    def values(self, seed: int = 0) -> np.ndarray:
        """Per CTA and k-block: SFA's 512 bytes then SFB's 1024, as the shared-memory stages hold them."""
        rng = np.random.default_rng(seed)
        return rng.integers(0, 256, (self.ctas, K_BLOCKS, 128 * SF_PER_ROW * 3), dtype=np.uint8)

    def expected(self, values: np.ndarray) -> np.ndarray:
        """(ctas, k-blocks, 128 lanes, columns read): what the layouts alone say TMEM holds after each copy."""
        a_cols, b_cols = self.read_columns
        out = np.zeros((self.ctas, K_BLOCKS, 128, a_cols + b_cols), dtype=np.uint32)
        split = 128 * SF_PER_ROW
        for cta in range(self.ctas):
            for kb in range(K_BLOCKS):
                stage = kb % STAGES
                tmem = np.zeros((128, 512), dtype=np.uint32)
                for plan, data, tensor in ((self.sfa_plan, values[cta, kb, :split], self.sfa),
                                           (self.sfb_plan, values[cta, kb, split:], self.sfb)):
                    static = plan.at(stage=stage)
                    image = np.zeros(static.smem_end, dtype=np.uint8)
                    image[stage * data.size:(stage + 1) * data.size] = data
                    pc.expected_tmem(static.src, static.dst, image, tmem, 0)
                cols = list(range(self.sfa.placement.column, self.sfa.placement.end)) + \
                    list(range(self.sfb.placement.column, self.sfb.placement.end))
                out[cta, kb] = tmem[:, cols]
        return out

    def compile(self, arch: str = "sm_100a", soft: bool = False):
        return pc.compile.compile_cuda(self.source(), arch=arch,
                                       options=("-DPYCUTE_SOFT_TCGEN05",) if soft else ())

    def run(self, gpu, arch: str, soft: bool = True, seed: int = 0):
        """Launch on ``gpu`` (``pycute.compile.runtime.Gpu``): ``(got, expected)``."""
        values = self.values(seed)
        kernel = gpu.kernel(self.compile(arch, soft), "sf_pipeline")
        a_cols, b_cols = self.read_columns
        words = self.ctas * K_BLOCKS * 128 * (a_cols + b_cols)
        d_sf, d_out = gpu.upload(values.reshape(-1)), gpu.upload(np.full(words, 0xFFFFFFFF, dtype=np.uint32))
        gpu.launch(kernel, d_sf, d_out, grid=self.ctas, block=128)
        got = gpu.download(d_out, np.uint32, words).reshape(self.ctas, K_BLOCKS, 128, a_cols + b_cols)
        return got, self.expected(values)


def main() -> None:
    example = SfPipeline(cta_group=2)
    print(example.alloc)
    for plan in (example.sfa_plan, example.sfb_plan):
        print(plan.explain(), end="\n\n")
    sass = example.compile("sm_100a").histogram()
    print("sm_100a SASS:", {op: n for op, n in sorted(sass.items()) if op.startswith(("UTCCP", "UTCBAR", "LDTM"))})


if __name__ == "__main__":
    main()
