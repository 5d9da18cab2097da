"""An attention kernel's Q tile in TMEM (for a TS-form MMA), beside its S and O accumulators in one allocation.

The 128x64 bf16 Q tile sits in shared memory in the 128-byte swizzle (as TMA writes it); pycute plans it as four
``tcgen05.cp.128x256b`` copies into the columns the allocation placed Q at, and the kernel reads Q back with
``tcgen05.ld.32x32b`` through the same header the copy uses. ``python examples/attention_q_tile.py`` prints the
placement, the plan and the sm_100a SASS summary.
"""
from __future__ import annotations

import numpy as np

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.codegen.tcgen05_ldst import ldst_helper
from pycute.tensor.canonical import kmajor_smem_tensor
from pycute.tensor.values import smem_element_offsets

ROWS, HEAD_DIM = 128, 64


class QTile:
    """S (128 x 128 f32), Q (128 x 64 bf16, two per 32-bit column) and O (128 x 64 f32) in one allocation."""

    def __init__(self):
        self.alloc = pc.TmemAllocation(cta_group=1)
        self.s = self.alloc.add(pc.f32, Layout((ROWS, 128), (TLane, TCol)), name="S")
        self.q = self.alloc.add(pc.bf16, Layout((ROWS, HEAD_DIM), (TLane, TCol)), name="Q")
        self.o = self.alloc.add(pc.f32, Layout((ROWS, HEAD_DIM), (TLane, TCol)), name="O")
        self.src = kmajor_smem_tensor(pc.bf16, ROWS, HEAD_DIM, "128B")
        self.plan = pc.make_tiled_copy(self.q, self.src)

    @property
    def q_columns(self) -> int:
        return self.q.placement.width

    def source(self) -> str:
        smem = self.plan.smem_end
        cols = self.q_columns
        return f"""{self.plan.cuda("copy_q")}
extern "C" __global__ void __launch_bounds__(128, 1)
q_tile(const unsigned short* __restrict__ q, const unsigned* __restrict__ offsets, unsigned* __restrict__ out) {{
  __shared__ __align__(1024) unsigned short q_smem[{smem // 2}];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long mbar_word;
  const unsigned warp = pycute_warp_index(), lane = threadIdx.x % 32u;
  const unsigned mbar = pycute_smem_address(&mbar_word);
  // Q element i goes to its swizzled place (TMA would write the same bytes).
  for (unsigned i = threadIdx.x; i < {ROWS * HEAD_DIM}u; i += blockDim.x) q_smem[offsets[i]] = q[i];
  if (warp == 0) {{
    pycute_tmem_alloc<1>(pycute_smem_address(&tmem_slot), {self.alloc.columns}u);
    pycute_tmem_relinquish_alloc_permit<1>();
  }}
  if (threadIdx.x == 0) pycute_mbarrier_init(mbar, 1);
  pycute_fence_proxy_async_shared();
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned tmem = tmem_slot;
  if (warp == 0) {{
    copy_q(q_smem, tmem);
    if (pycute_elect_one_sync()) pycute_tcgen05_commit<1>(mbar);
  }}
  pycute_mbarrier_wait_parity(mbar, 0);
  pycute_tcgen05_fence_after_thread_sync();
  unsigned v[{cols}];
  {ldst_helper("ld", cols)}(tmem + ((32u * (warp % 4u)) << PYCUTE_TMEM_LANE_SHIFT) + {self.q.placement.column}u, v);
  pycute_tcgen05_wait_ld();
  for (unsigned j = 0; j < {cols}u; ++j) out[(32u * (warp % 4u) + lane) * {cols}u + j] = v[j];
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 0) pycute_tmem_dealloc<1>(tmem, {self.alloc.columns}u);
}}
"""

    def values(self, seed: int = 0) -> np.ndarray:
        return np.random.default_rng(seed).integers(0, 1 << 16, ROWS * HEAD_DIM, dtype=np.uint16)

    def offsets(self) -> np.ndarray:
        """Element i of Q (in the layout's order) -> its element offset in the swizzled buffer."""
        return smem_element_offsets(self.src).astype(np.uint32)

    def expected(self, values: np.ndarray) -> np.ndarray:
        """(128 lanes, Q's columns): what the layouts alone say TMEM holds."""
        image = np.zeros(self.plan.smem_end // 2, dtype=np.uint16)
        image[self.offsets()] = values
        tmem = pc.expected_tmem(self.src, self.q, image.view(np.uint8), np.zeros((128, 512), np.uint32), 0)
        return tmem[:, self.q.placement.column:self.q.placement.end]

    def compile(self, arch: str = "sm_100a", soft: bool = False):
        return pc.compile.compile_cuda(self.source(), arch=arch,
                                       options=("-DPYCUTE_SOFT_TCGEN05",) if soft else ())

    def run(self, gpu, arch: str, soft: bool = True, seed: int = 0):
        values = self.values(seed)
        kernel = gpu.kernel(self.compile(arch, soft), "q_tile")
        words = 128 * self.q_columns
        d_q, d_off = gpu.upload(values), gpu.upload(self.offsets())
        d_out = gpu.upload(np.full(words, 0xFFFFFFFF, dtype=np.uint32))
        gpu.launch(kernel, d_q, d_off, d_out, grid=1, block=128)
        return gpu.download(d_out, np.uint32, words).reshape(128, self.q_columns), self.expected(values)


def main() -> None:
    example = QTile()
    print(example.alloc)
    print(example.plan.explain())
    sass = example.compile("sm_100a").histogram()
    print("sm_100a SASS:", {op: n for op, n in sorted(sass.items()) if op.startswith(("UTCCP", "UTCBAR", "LDTM"))})


if __name__ == "__main__":
    main()
