"""The TMA round trip on a GPU: one kernel loads a tile with a plan's boxes (real TMA, tensor map encoded by the
driver), dumps the shared-memory image, and stores the tile back into a second array with the store plan's boxes;
the emulator runs the same plans on the same bytes, and both images must agree bit for bit."""
from __future__ import annotations

import attrs
import numpy as np

from .common import BUFFER_AND_BARRIER, MBARRIER_FIRST
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_arg, tensor_map_bytes
from ..copy.tma.plan import TmaPlan
from ..errors import CompileError, PlanError
from ..sim.emulator import Sm90Emulator
from ..sim.verify_tma import element_bytes
from ..tensor.values import layout_values
from ..codegen.tma import emit_tma_copy

__all__ = ["TmaRoundTrip"]

_MARKER = 0xA5            # shared memory starts as this byte, so bytes no box writes are seen as untouched
_SPIN = 1 << 26           # try_wait polls before the kernel gives up (a wrong expect_tx then fails, never hangs)


def _check_pair(load: TmaPlan, store: TmaPlan | None) -> None:
    if not isinstance(load, TmaPlan) or not (store is None or isinstance(store, TmaPlan)):
        raise TypeError("TmaRoundTrip: expected a load TmaPlan and a store TmaPlan or None (make_tma_copy)")
    if load.direction != "load" or (store is not None and (store.direction != "store" or load.smem != store.smem)):
        raise CompileError("TmaRoundTrip: a load plan and a store plan of the same shared tile")
    if load.multicast is not None and store is not None:
        raise CompileError("TmaRoundTrip: a multicast load runs without a store")
    if store is not None and store.coordinate_names != load.coordinate_names:
        raise CompileError(f"TmaRoundTrip: the load takes coordinates {load.coordinate_names}, the store "
                           f"{store.coordinate_names}; the kernel passes the same ones to both")


@attrs.frozen
class TmaRoundTrip:
    """Load ``load``'s tile of array A, dump shared memory, store it with ``store`` (if any) into array B. With a
    multicast every CTA of the cluster runs the kernel: those of a mask issue their slices, those that receive arm
    their mbarrier with what the plan says reaches them (``extra_tx`` more: a count the copy must not meet, so that
    the barrier is seen not to complete within ``spin`` polls), and every CTA dumps its shared memory."""

    load: TmaPlan
    store: TmaPlan | None
    grid_constant: bool = False         # the maps as __grid_constant__ kernel parameters, not in global memory
    extra_tx: int = 0
    spin: int = _SPIN

    def __attrs_post_init__(self) -> None:
        _check_pair(self.load, self.store)
        if self.load.atom.pair:
            raise CompileError("TmaRoundTrip: the pair form is sm_100a's (no round trip on this harness)")

    @property
    def cluster(self) -> tuple[int, int, int]:
        """The cluster's shape (the multicast's, else one CTA)."""
        return self.load.multicast.spec.cluster if self.load.multicast else (1, 1, 1)

    @property
    def ctas(self) -> int:
        """CTAs of the cluster."""
        return self.cluster[0] * self.cluster[1] * self.cluster[2]

    def received(self) -> list[int]:
        """Bytes each CTA's mbarrier receives (0: it takes no part)."""
        if self.load.multicast is None:
            return [self.load.expect_tx]
        spec = self.load.multicast.spec
        masks = [spec.mask_of(r) for r in spec.participants()]
        return [self.load.expect_tx if any(m is not None and m >> r & 1 for m in masks) else 0
                for r in range(self.ctas)]

    @property
    def smem_bytes(self) -> int:
        """Shared bytes from the buffer base that cover the tile (a whole KiB): the largest (swizzled) element offset
        of the tile's elements, all evaluated at once (the tile's extents are its layout's top-level modes, so the
        coordinates in colex order are the layout's 1-D indices; one ``element_offset`` call per element took
        seconds per kernel on the largest tiles)."""
        smem = self.load.smem
        linear = smem.offset + layout_values(smem.layout)
        last = int((smem.swizzle(linear) if smem.swizzle is not None else linear).max())
        return -(-(last + 1) * self.load.elem_bytes // 1024) * 1024

    def source(self) -> str:
        names = self.load.coordinate_names
        tiles = "".join(f", int {n}" for n in names)
        args = "".join(f", {n}" for n in names)
        store = "" if self.store is None else emit_tma_copy(self.store, "rt_store").replace(
            '#include "pycute/tma.cuh"\n', "")
        by_value = self.grid_constant
        maps = ("const __grid_constant__ pycute_tensor_map in_param, const __grid_constant__ pycute_tensor_map "
                "out_param" if by_value else "const pycute_tensor_map* in_map, const pycute_tensor_map* out_map")
        store_call = "" if self.store is None else f"rt_store(out_map, base{args});"
        table = ", ".join(f"{b + self.extra_tx if b else 0}u" for b in self.received())
        return (emit_tma_copy(self.load, "rt_load") + store + f"""
__device__ const unsigned rt_tx[{self.ctas}] = {{{table}}};   // bytes each CTA's mbarrier is armed with
extern "C" __global__ void tma_roundtrip({maps}, unsigned char* dump, unsigned* status{tiles}) {{
  {"const pycute_tensor_map* in_map = &in_param; const pycute_tensor_map* out_map = &out_param;" if by_value else ""}
{BUFFER_AND_BARRIER}
  const unsigned rank = pycute_cluster_ctarank();
  const unsigned tx = rt_tx[rank];
{MBARRIER_FIRST}
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) buf[i] = {_MARKER};
  if (threadIdx.x == 0) {{
    {"" if by_value else "pycute_tensormap_acquire(in_map); pycute_tensormap_acquire(out_map);"}
    if (tx) pycute_mbarrier_arrive_expect_tx(m, tx);
  }}
  pycute_fence_proxy_async_shared();
  pycute_cluster_sync();           // every CTA's mbarrier is armed before any multicast signals it
  if (threadIdx.x == 0) rt_load(in_map, base, m{args});
  unsigned spins = 0;
  while (tx && !pycute_mbarrier_try_wait_parity(m, 0) && ++spins < {self.spin}u) {{
  }}
  if (threadIdx.x == 0) status[rank] = spins;
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) dump[rank * {self.smem_bytes}u + i] = buf[i];
  __syncthreads();
  if (threadIdx.x == 0) {{
    {store_call}
    pycute_bulk_wait_group<0>();
  }}
  pycute_cluster_sync();           // no CTA exits while a peer's multicast may still write it
}}
""")

    def compile(self, arch: str = "sm_90a", checked: bool = False) -> Compiled:
        """The kernel, for ``arch``; ``checked``: the plans' preconditions trap on the device."""
        return compile_cuda(self.source(), arch=arch, checked=checked)

    def arrays(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Array A's and array B's initial bytes."""
        rng = np.random.default_rng(seed)
        nbytes = self.load.array_bytes
        finite = self.store is not None and self.store.reduce is not None
        dtype = self.load.gmem.dtype.name
        return element_bytes(rng, nbytes, dtype, finite), element_bytes(rng, nbytes, dtype, finite)

    def emulate(self, tile: tuple[int, ...], seed: int = 0, params: object = None, shift: int = 0
                ) -> tuple[np.ndarray, np.ndarray]:
        """``(every CTA's shared image, array B)`` the emulator says the kernel leaves for the coordinates ``tile``
        (tile indices, or the plans' run-time origins in order); ``params``: other tensor-map parameters for the
        copies (a candidate model of the hardware), ``shift``: the boxes moved that many bytes and the image read
        back from there (the phase a tile-relative swizzle would have)."""
        a, b = self.arrays(seed)
        emu = Sm90Emulator(smem_bytes=self.smem_bytes + shift, ctas=self.ctas)
        mc = self.load.multicast
        for cta in range(self.ctas):
            emu.write_smem(0, np.full(self.smem_bytes + shift, _MARKER, dtype=np.uint8), cta=cta)
        for rank in (mc.spec.participants() if mc else [0]):
            for issue in self.load.stream(0, *tile, cta=rank):
                emu.tma_load(params or self.load.tensor_map, a, issue.coords, issue.smem + shift, cta=rank,
                             mask=issue.mask)
        image = np.concatenate([emu.ctas[c].smem[shift:] for c in range(self.ctas)])
        if self.store is not None:
            for issue in self.store.stream(0, *tile):
                emu.tma_store(params or self.store.tensor_map, b, issue.coords, issue.smem + shift,
                              reduce=self.store.reduce)
        return image, b

    def launch(self, gpu: Gpu, tile: tuple[int, ...], seed: int = 0, arch: str = "sm_90a",
               checked: bool = False) -> dict:
        """Run on ``gpu`` at coordinates ``tile`` without emulating: ``{"smem": image, "array": B, "spins": n,
        "a": A's bytes, "b": B's bytes before}`` (for cases outside what the plans promise, held to a model of
        the caller's own)."""
        gpu = check_gpu(gpu)
        names = self.load.coordinate_names
        if len(tile) != len(names):          # the launch would pass the kernel fewer (or more) ints than it reads
            raise PlanError(f"TmaRoundTrip.launch: {len(tile)} coordinates {tuple(tile)} given; the kernel takes "
                            f"{len(names)} ({', '.join(names)})")
        kernel = gpu.kernel(self.compile(arch, checked), "tma_roundtrip")
        a, b = self.arrays(seed)
        d_a, d_b = gpu.upload(a), gpu.upload(b)
        pairs = ((self.load, d_a), (self.store or self.load, d_b))
        if self.grid_constant:
            d_in, d_out = (tensor_map_arg(p.tensor_map, int(b.handle)) for p, b in pairs)
        else:
            d_in, d_out = (gpu.upload(np.frombuffer(tensor_map_bytes(p.tensor_map.encode(int(b.handle))),
                                                    dtype=np.uint8)) for p, b in pairs)
        d_dump = gpu.upload(np.zeros(self.ctas * self.smem_bytes, dtype=np.uint8))
        d_status = gpu.upload(np.zeros(self.ctas, dtype=np.uint32))
        gpu.launch(kernel, d_in, d_out, d_dump, d_status, *(np.int32(t) for t in tile), grid=self.cluster, block=128,
                   cluster=self.cluster, dynamic_smem=self.smem_bytes + 1024)
        return {"smem": gpu.download(d_dump, np.uint8, self.ctas * self.smem_bytes),
                "array": gpu.download(d_b, np.uint8, b.size), "a": a, "b": b,
                "spins": int(gpu.download(d_status, np.uint32, self.ctas).max())}

    def run(self, gpu: Gpu, tile: tuple[int, ...], seed: int = 0, arch: str = "sm_90a", checked: bool = False) -> dict:
        """Run on ``gpu`` at coordinates ``tile``; ``{"smem": (got, want), "array": (got, want), "spins": n}``."""
        got = self.launch(gpu, tile, seed, arch, checked)
        image, array = self.emulate(tile, seed)
        return {"smem": (got["smem"], image), "array": (got["array"], array), "spins": got["spins"]}
