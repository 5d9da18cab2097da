"""One chain on a GPU: global -> TMA -> shared -> tcgen05.cp -> TMEM -> tcgen05.ld -> global, from a TMA load plan
and a tcgen05.cp plan of the same shared tile. On an sm_100a GPU everything is the hardware's; with
``-DPYCUTE_SOFT_TCGEN05`` on sm_90a (the H200) the TMA load is real and the tcgen05 steps run the header's software
model. The TMEM image read back must equal the emulator's for the same array (TMA emulated, then the cp stream)."""
from __future__ import annotations

import attrs
import numpy as np

from .common import tmem_readback
from ..codegen.tcgen05_cp import emit_device_function
from ..codegen.tcgen05_ldst import ldst_helper
from ..codegen.tma import emit_tma_copy
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..copy.tma.plan import TmaPlan
from ..errors import CompileError
from ..sim.emulator import Sm100Emulator
from ..tensor.values import smem_bytes_needed

__all__ = ["TmaCpChain"]

_CHUNK = 8
_SPIN = 1 << 26


@attrs.frozen
class TmaCpChain:
    """``load`` brings tile ``t`` of an array into shared memory; ``cp`` copies that tile into TMEM (cta_group 1);
    every warp reads its TMEM lane quadrant back to global memory."""

    load: TmaPlan
    cp: Tcgen05CpPlan

    def __attrs_post_init__(self) -> None:
        if not (isinstance(self.load, TmaPlan) and isinstance(self.cp, Tcgen05CpPlan)):
            raise TypeError("TmaCpChain: expected a TMA load plan and a tcgen05.cp plan")
        if self.load.direction != "load" or self.load.multicast or self.cp.cta_group != 1:
            raise CompileError("TmaCpChain: a plain TMA load and a cta_group::1 tcgen05.cp")
        if self.load.smem.offset * self.load.elem_bytes != 0:
            raise CompileError("TmaCpChain: the TMA tile starts the buffer (both plans read it from its base)")

    @property
    def smem_bytes(self) -> int:
        return smem_bytes_needed(self.cp.src)

    @property
    def columns(self) -> int:
        return self.cp.dst.alloc_columns

    def source(self) -> str:
        cols, tiles = self.columns, ", ".join(f"int t{k}" for k in range(len(self.load.tile_shape)))
        args = ", ".join(f"t{k}" for k in range(len(self.load.tile_shape)))
        ld, st = ldst_helper("ld", _CHUNK), ldst_helper("st", _CHUNK)
        return (emit_tma_copy(self.load, "chain_load") + emit_device_function(self.cp, "chain_cp") + f"""
extern "C" __global__ void __launch_bounds__(128, 1) tma_cp_chain(const pycute_tensor_map* map, unsigned* out,
                                                                unsigned* status, {tiles}) {{
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long loaded, copied;
  const unsigned tid = threadIdx.x, warp = pycute_warp_index(), lane = tid % 32u;
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buffer = raw + (base - pycute_smem_address(raw));
  const unsigned m_load = pycute_smem_address(&loaded), m_cp = pycute_smem_address(&copied);
  if (warp == 0) {{
    pycute_tmem_alloc<1>(pycute_smem_address(&tmem_slot), {cols}u);
    pycute_tmem_relinquish_alloc_permit<1>();
  }}
  if (tid == 0) {{
    pycute_tensormap_acquire(map);
    pycute_mbarrier_init(m_load, 1);
    pycute_mbarrier_init(m_cp, 1);
  }}
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned taddr = tmem_slot;
  const unsigned warp_taddr = taddr + ((PYCUTE_TMEM_QUADRANT_LANES * (warp % 4u)) << PYCUTE_TMEM_LANE_SHIFT);
  const unsigned zeros[{_CHUNK}] = {{}};
  for (unsigned c = 0; c < {cols}u; c += {_CHUNK}u) {st}(warp_taddr + c, zeros);
  pycute_tcgen05_wait_st();
  if (tid == 0) {{                     // TMA: the tile into shared memory
    pycute_mbarrier_arrive_expect_tx(m_load, chain_load_expect_tx);
    chain_load(map, base, m_load, {args});
  }}
  unsigned spins = 0;
  while (!pycute_mbarrier_try_wait_parity(m_load, 0) && ++spins < {_SPIN}u) {{
  }}
  if (tid == 0) status[0] = spins;
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  if (warp == 0) {{                    // tcgen05.cp: shared memory into TMEM
    chain_cp(buffer, taddr);
    if (pycute_elect_one_sync()) pycute_tcgen05_commit<1>(m_cp);
  }}
  pycute_mbarrier_wait_parity(m_cp, 0);
  pycute_tcgen05_fence_after_thread_sync();
{tmem_readback(ld, cols, cols, _CHUNK)}
}}
""")

    def compile(self, arch: str = "sm_100a", soft: bool = False) -> Compiled:
        return compile_cuda(self.source(), arch=arch, options=("-DPYCUTE_SOFT_TCGEN05",) if soft else ())

    def array(self, seed: int = 0) -> np.ndarray:
        last = sum((n - 1) * d for n, d in self.load.array_modes)
        return np.random.default_rng(seed).integers(0, 256, (last + 1) * self.load.elem_bytes, dtype=np.uint8)

    def emulate(self, tile: tuple[int, ...], seed: int = 0) -> np.ndarray:
        """The (128 lanes, columns) TMEM image the emulator says the chain leaves (TMEM zeroed first)."""
        emu = Sm100Emulator(smem_bytes=self.smem_bytes, fill_tmem=0)
        gmem = self.array(seed)
        for issue in self.load.stream(0, *tile):
            emu.tma_load(self.load.tensor_map, gmem, issue.coords, issue.smem)
        col = emu.alloc(self.columns)
        emu.run(self.cp.stream(0, col))
        return emu.tmem_image()[:, col:col + self.columns]

    def run(self, gpu: Gpu, tile: tuple[int, ...], seed: int = 0, arch: str = "sm_90a", soft: bool = True) -> dict:
        """Run on ``gpu``; ``{"tmem": (got, want), "spins": n}``."""
        gpu = check_gpu(gpu)
        d_a = gpu.upload(self.array(seed))
        tmap = gpu.upload(np.frombuffer(tensor_map_bytes(self.load.tensor_map.encode(int(d_a.handle))),
                                        dtype=np.uint8))
        d_out = gpu.upload(np.zeros(128 * self.columns, dtype=np.uint32))
        d_status = gpu.upload(np.zeros(1, dtype=np.uint32))
        kernel = gpu.kernel(self.compile(arch, soft), "tma_cp_chain")
        gpu.launch(kernel, tmap, d_out, d_status, *(np.int32(t) for t in tile), grid=1, block=128,
                   dynamic_smem=self.smem_bytes + 1024)
        return {"tmem": (gpu.download(d_out, np.uint32, 128 * self.columns).reshape(128, self.columns),
                         self.emulate(tile, seed)), "spins": int(gpu.download(d_status, np.uint32, 1)[0])}
