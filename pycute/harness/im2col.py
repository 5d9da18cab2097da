"""The im2col round trip on a GPU: one kernel loads a tile of a convolution's implicit-GEMM A with an im2col plan
(real TMA, the map encoded by ``cuTensorMapEncodeIm2col``) and dumps shared memory; the emulator runs the same
loads on the same bytes, and the tile read through its layout must equal numpy's im2col."""
from __future__ import annotations

import attrs
import numpy as np

from ..codegen.tma_modes import emit_im2col_copy
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.tma.im2col import Im2colPlan, tile_offsets
from ..sim.emulator import Sm90Emulator
from ..sim.verify_tma_modes import activations, expected_tile, tile_image
from .common import BUFFER_AND_BARRIER

__all__ = ["Im2colRoundTrip"]

_MARKER = 0xA5
_SPIN = 1 << 26


@attrs.frozen
class Im2colRoundTrip:
    """Load tile ``(m_tile, k_tile)`` of A with ``plan`` and dump the CTA's shared memory."""

    plan: Im2colPlan

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, Im2colPlan):
            raise TypeError(f"Im2colRoundTrip: expected an Im2colPlan (make_im2col_copy), got "
                            f"{type(self.plan).__name__}")

    @property
    def smem_bytes(self) -> int:
        """Shared bytes from the buffer base that cover the tile (a whole KiB)."""
        return -(-(int(tile_offsets(self.plan.smem).max()) + 1) * self.plan.elem_bytes // 1024) * 1024

    def source(self) -> str:
        return emit_im2col_copy(self.plan, "rt_load") + f"""
extern "C" __global__ void im2col_roundtrip(const pycute_tensor_map* map, unsigned char* dump, unsigned* status,
                                            int m_tile, int k_tile) {{
{BUFFER_AND_BARRIER}
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) buf[i] = {_MARKER};
  if (threadIdx.x == 0) {{
    pycute_tensormap_acquire(map);
    pycute_mbarrier_init(m, 1);
    pycute_mbarrier_arrive_expect_tx(m, rt_load_expect_tx);
  }}
  pycute_fence_proxy_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) rt_load(map, base, m, m_tile, k_tile);
  unsigned spins = 0;
  while (!pycute_mbarrier_try_wait_parity(m, 0) && ++spins < {_SPIN}u) {{
  }}
  if (threadIdx.x == 0) status[0] = spins;
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) dump[i] = buf[i];
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def emulate(self, gmem: np.ndarray, m_tile: int, k_tile: int) -> np.ndarray:
        """The shared image the emulator says the kernel leaves."""
        emu = Sm90Emulator(smem_bytes=self.smem_bytes)
        emu.write_smem(0, np.full(self.smem_bytes, _MARKER, dtype=np.uint8))
        for issue in self.plan.stream(0, m_tile, k_tile):
            emu.tma_load_im2col(self.plan.tensor_map, gmem, issue.coords, issue.im2col or (), issue.smem)
        return emu.ctas[0].smem.copy()

    def run(self, gpu: Gpu, m_tile: int, k_tile: int, seed: int = 0, arch: str = "sm_90a") -> dict:
        """Run on ``gpu``: ``{"smem": (got, emulator's), "tile": (got, numpy's), "spins": n}``."""
        gpu = check_gpu(gpu)
        gmem, x = activations(self.plan, np.random.default_rng(seed))
        d_x = gpu.upload(gmem)
        d_map = gpu.upload(np.frombuffer(tensor_map_bytes(self.plan.tensor_map.encode(int(d_x.handle))),
                                         dtype=np.uint8))
        d_dump = gpu.upload(np.zeros(self.smem_bytes, dtype=np.uint8))
        d_status = gpu.upload(np.zeros(1, dtype=np.uint32))
        kernel = gpu.kernel(self.compile(arch), "im2col_roundtrip")
        gpu.launch(kernel, d_map, d_dump, d_status, np.int32(m_tile), np.int32(k_tile), grid=1, block=128,
                   dynamic_smem=self.smem_bytes + 1024)
        got = gpu.download(d_dump, np.uint8, self.smem_bytes)
        return {"smem": (got, self.emulate(gmem, m_tile, k_tile)),
                "tile": (tile_image(self.plan, got), expected_tile(self.plan, x, m_tile, k_tile)),
                "spins": int(gpu.download(d_status, np.uint32, 1)[0])}
