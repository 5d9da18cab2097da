"""Bulk and DSMEM round trips on a GPU. Bulk: one thread loads a tile with a plan's flat copies (real UBLKCP),
shared memory is dumped, and the store plan writes it back into a second array. DSMEM: every CTA of a cluster
copies its source tile into the next CTA's destination tile and waits on its own mbarrier. The emulator runs the
same streams on the same bytes; the images must agree bit for bit."""
from __future__ import annotations

import attrs
import numpy as np

from ..codegen.bulk import emit_bulk_copy, emit_dsmem_copy
from .common import BUFFER_AND_BARRIER, MBARRIER_FIRST
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..copy.bulk.plan import BulkPlan
from ..copy.dsmem.plan import DsmemPlan
from ..errors import CompileError
from ..sim.emulator import Sm90Emulator
from ..tensor.values import smem_bytes_needed

__all__ = ["BulkRoundTrip", "DsmemRoundTrip"]

_MARKER = 0xA5
_SPIN = 1 << 26
# Every thread's mbarrier wait already orders the bulk load's bytes before its reads (PTX ISA
# #parallel-synchronization-and-communication-instructions-mbarrier-test-wait-try-wait); compute-sanitizer racecheck
# instead counts a cp.async.bulk's shared writes as the issuing thread's and does not see that wait as ordering them,
# so it reports every other thread's read (docs/sanitizer.md). A barrier after the waits orders them for the tool too.
_RACECHECK = "every thread has waited: orders the issuing thread's copy before the reads for racecheck too"
_WAIT = f"""unsigned spins = 0;
  while (!pycute_mbarrier_try_wait_parity(m, 0) && ++spins < {_SPIN}u) {{
  }}"""


@attrs.frozen
class BulkRoundTrip:
    """Load ``load``'s tile of array A, dump shared memory, store it with ``store`` into array B."""

    load: BulkPlan
    store: BulkPlan

    def __attrs_post_init__(self) -> None:
        if not (isinstance(self.load, BulkPlan) and isinstance(self.store, BulkPlan)):
            raise TypeError("BulkRoundTrip: expected a load and a store BulkPlan (make_bulk_copy)")
        if self.load.direction != "load" or self.store.direction != "store" or self.load.smem != self.store.smem:
            raise CompileError("BulkRoundTrip: a load plan and a store plan of the same shared tile")

    @property
    def smem_bytes(self) -> int:
        return smem_bytes_needed(self.load.smem)

    def source(self) -> str:
        modes = len(self.load.tile_shape)
        tiles = ", ".join(f"int t{k}" for k in range(modes))
        args = ", ".join(f"t{k}" for k in range(modes))
        store = emit_bulk_copy(self.store, "rt_store").replace('#include "pycute/bulk.cuh"\n', "")
        return (emit_bulk_copy(self.load, "rt_load") + store + f"""
extern "C" __global__ void bulk_roundtrip(const unsigned char* a, unsigned char* b, unsigned char* dump,
                                          unsigned* status, {tiles}) {{
{BUFFER_AND_BARRIER}
{MBARRIER_FIRST}
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) buf[i] = {_MARKER};
  if (threadIdx.x == 0) pycute_mbarrier_arrive_expect_tx(m, rt_load_expect_tx);
  pycute_fence_proxy_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) rt_load(a, base, m, {args});
  {_WAIT}
  __syncthreads();                 // {_RACECHECK}
  if (threadIdx.x == 0) status[0] = spins;
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) dump[i] = buf[i];
  __syncthreads();
  if (threadIdx.x == 0) {{
    rt_store(b, base, {args});
    pycute_bulk_wait_group<0>();
  }}
}}
""")

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def arrays(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        last = sum((n - 1) * d for n, d in self.load.array_modes)
        rng = np.random.default_rng(seed)
        return tuple(rng.integers(0, 256, (last + 1) * self.load.elem_bytes, dtype=np.uint8)  # type: ignore
                     for _ in range(2))

    def emulate(self, tile: tuple[int, ...], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.arrays(seed)
        emu = Sm90Emulator(smem_bytes=self.smem_bytes)
        emu.write_smem(0, np.full(self.smem_bytes, _MARKER, dtype=np.uint8))
        for issue in self.load.stream(0, *tile):
            emu.bulk_load(a, issue)
        image = emu.ctas[0].smem.copy()
        for issue in self.store.stream(0, *tile):
            emu.bulk_store(b, issue)
        return image, b

    def run(self, gpu: Gpu, tile: tuple[int, ...], seed: int = 0, arch: str = "sm_90a") -> dict:
        """Run on ``gpu``; ``{"smem": (got, want), "array": (got, want), "spins": n}``."""
        gpu = check_gpu(gpu)
        a, b = self.arrays(seed)
        d_a, d_b = gpu.upload(a), gpu.upload(b)
        d_dump = gpu.upload(np.zeros(self.smem_bytes, dtype=np.uint8))
        d_status = gpu.upload(np.zeros(1, dtype=np.uint32))
        kernel = gpu.kernel(self.compile(arch), "bulk_roundtrip")
        gpu.launch(kernel, d_a, d_b, d_dump, d_status, *(np.int32(t) for t in tile), grid=1, block=128,
                   dynamic_smem=self.smem_bytes + 1024)
        image, array = self.emulate(tile, seed)
        return {"smem": (gpu.download(d_dump, np.uint8, self.smem_bytes), image),
                "array": (gpu.download(d_b, np.uint8, b.size), array),
                "spins": int(gpu.download(d_status, np.uint32, 1)[0])}


@attrs.frozen
class DsmemRoundTrip:
    """Every CTA ``r`` of a ``ctas``-CTA cluster copies its source tile into CTA ``(r + 1) % ctas``'s destination
    tile; each dumps its destination region after its mbarrier completes."""

    plan: DsmemPlan
    ctas: int

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, DsmemPlan):
            raise TypeError("DsmemRoundTrip: expected a DsmemPlan (make_dsmem_copy)")
        if not 2 <= self.ctas <= 16:
            raise CompileError(f"DsmemRoundTrip: a cluster of 2 to 16 CTAs, not {self.ctas}")

    @property
    def src_bytes(self) -> int:
        return smem_bytes_needed(self.plan.src)

    @property
    def region(self) -> int:
        """Bytes of each CTA's buffer: the source region, then the destination region (each whole KiB)."""
        return self.src_bytes + smem_bytes_needed(self.plan.dst)

    def source(self) -> str:
        n, r = self.ctas, self.region
        return (emit_dsmem_copy(self.plan, "rt_dsmem") + f"""
extern "C" __global__ void dsmem_roundtrip(const unsigned char* images, unsigned char* dump, unsigned* status) {{
{BUFFER_AND_BARRIER}
  const unsigned rank = pycute_cluster_ctarank();
{MBARRIER_FIRST}
  for (unsigned i = threadIdx.x; i < {r}u; i += blockDim.x) buf[i] = images[rank * {r}u + i];
  if (threadIdx.x == 0) pycute_mbarrier_arrive_expect_tx(m, rt_dsmem_expect_tx);
  pycute_fence_proxy_async_shared();
  pycute_cluster_sync();           // every CTA's source written and mbarrier armed before any copy
  if (threadIdx.x == 0) rt_dsmem(base + {self.src_bytes}u, base, m, (rank + 1u) % {n}u);
  {_WAIT}
  if (threadIdx.x == 0) status[rank] = spins;
  for (unsigned i = threadIdx.x; i < {r}u; i += blockDim.x) dump[rank * {r}u + i] = buf[i];
  pycute_cluster_sync();           // no CTA exits while a peer may still copy into it
}}
""")

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def images(self, seed: int = 0) -> np.ndarray:
        return np.random.default_rng(seed).integers(0, 256, self.ctas * self.region, dtype=np.uint8)

    def emulate(self, seed: int = 0) -> np.ndarray:
        """Every CTA's buffer after the copies, as the emulator says."""
        images = self.images(seed)
        emu = Sm90Emulator(smem_bytes=self.region, ctas=self.ctas)
        for c in range(self.ctas):
            emu.write_smem(0, images[c * self.region:(c + 1) * self.region], cta=c)
        for c in range(self.ctas):
            for issue in self.plan.stream(self.src_bytes, 0, peer=(c + 1) % self.ctas, cta=c):
                emu.dsmem_copy(issue, cta=c)
        return np.concatenate([emu.ctas[c].smem for c in range(self.ctas)])

    def run(self, gpu: Gpu, seed: int = 0, arch: str = "sm_90a") -> dict:
        """Run on ``gpu``; ``{"smem": (got, want), "spins": n}``."""
        gpu = check_gpu(gpu)
        d_img = gpu.upload(self.images(seed))
        d_dump = gpu.upload(np.zeros(self.ctas * self.region, dtype=np.uint8))
        d_status = gpu.upload(np.zeros(self.ctas, dtype=np.uint32))
        kernel = gpu.kernel(self.compile(arch), "dsmem_roundtrip")
        gpu.launch(kernel, d_img, d_dump, d_status, grid=self.ctas, block=128, cluster=self.ctas,
                   dynamic_smem=self.region + 1024)
        return {"smem": (gpu.download(d_dump, np.uint8, self.ctas * self.region), self.emulate(seed)),
                "spins": int(gpu.download(d_status, np.uint32, self.ctas).max())}
