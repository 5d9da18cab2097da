"""The cp.async round trip on a GPU: ``threads`` threads copy a tile with a plan's generated function (real
LDGSTS), complete it as the plan says (wait_group or mbarrier arrivals), and dump shared memory; the emulator runs
every thread's stream on the same bytes, and both images must agree bit for bit."""
from __future__ import annotations

import attrs
import numpy as np

from ..codegen.cp_async import emit_cp_async_copy
from .common import BUFFER_AND_BARRIER
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..copy.cp_async.plan import CpAsyncPlan
from ..sim.emulator import Sm90Emulator
from ..tensor.values import smem_bytes_needed

__all__ = ["CpAsyncRoundTrip"]

_MARKER = 0xA5
_SPIN = 1 << 26


@attrs.frozen
class CpAsyncRoundTrip:
    """Copy ``plan``'s tile of an array into shared memory with every thread, then dump shared memory."""

    plan: CpAsyncPlan

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, CpAsyncPlan):
            raise TypeError("CpAsyncRoundTrip: expected a CpAsyncPlan (make_cp_async_copy)")

    @property
    def smem_bytes(self) -> int:
        return smem_bytes_needed(self.plan.smem)

    @property
    def block(self) -> int:
        return -(-self.plan.threads // 32) * 32

    def source(self) -> str:
        p = self.plan
        modes = len(p.tile_shape)
        tiles = ", ".join(f"int t{k}" for k in range(modes))
        args = ", ".join(f"t{k}" for k in range(modes)) + "".join(", 0u" for _ in p.stages)
        arrive = p.completion == "arrive"
        wait = ("unsigned spins = 0;\n  while (!pycute_mbarrier_try_wait_parity(m, 0) && ++spins < "
                f"{_SPIN}u) {{\n  }}\n  if (threadIdx.x == 0) status[0] = spins;" if arrive else
                "pycute_cp_async_wait_group<0>();")
        return ('#include "pycute/common.cuh"\n' + emit_cp_async_copy(p, "rt_copy") + f"""
extern "C" __global__ void cp_async_roundtrip(const unsigned char* gmem, unsigned char* dump, unsigned* status,
                                              {tiles}) {{
{BUFFER_AND_BARRIER}
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) buf[i] = {_MARKER};
  if (threadIdx.x == 0) pycute_mbarrier_init(m, {p.arrivals or 1}u);
  __syncthreads();
  if (threadIdx.x < {p.threads}u) rt_copy(gmem, base, threadIdx.x, {args}{", m" if arrive else ""});
  {wait}
  __syncthreads();
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) dump[i] = buf[i];
}}
""")

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def array(self, seed: int = 0) -> np.ndarray:
        last = sum((n - 1) * d for n, d in self.plan.array_modes)
        return np.random.default_rng(seed).integers(0, 256, (last + 1) * self.plan.elem_bytes, dtype=np.uint8)

    def emulate(self, tile: tuple[int, ...], seed: int = 0) -> np.ndarray:
        """The shared image the emulator says the kernel leaves."""
        p, gmem = self.plan, self.array(seed)
        emu = Sm90Emulator(smem_bytes=self.smem_bytes)
        emu.write_smem(0, np.full(self.smem_bytes, _MARKER, dtype=np.uint8))
        values = {s.name: 0 for s in p.stages}
        for t in range(p.threads):
            for issue in p.stream(0, *tile, thread=t, **values):
                emu.cp_async(gmem, issue, thread=t)
            if p.completion == "group":
                emu.cp_async_commit(thread=t)
                emu.cp_async_wait(0, thread=t)
            else:
                emu.cp_async_arrive_noinc(0, thread=t)
        return emu.ctas[0].smem.copy()

    def run(self, gpu: Gpu, tile: tuple[int, ...], seed: int = 0, arch: str = "sm_90a") -> dict:
        """Run on ``gpu``; ``{"smem": (got, want), "spins": n}``."""
        gpu = check_gpu(gpu)
        d_a = gpu.upload(self.array(seed))
        d_dump = gpu.upload(np.zeros(self.smem_bytes, dtype=np.uint8))
        d_status = gpu.upload(np.zeros(1, dtype=np.uint32))
        kernel = gpu.kernel(self.compile(arch), "cp_async_roundtrip")
        gpu.launch(kernel, d_a, d_dump, d_status, *(np.int32(t) for t in tile), grid=1, block=self.block,
                   dynamic_smem=self.smem_bytes + 1024)
        return {"smem": (gpu.download(d_dump, np.uint8, self.smem_bytes), self.emulate(tile, seed)),
                "spins": int(gpu.download(d_status, np.uint32, 1)[0])}
