"""A write-only epilogue stream built from an epilogue plan: persistent CTAs walk the tiles of a 2-D output array;
for each, every thread makes its fragment in registers (small integers, exact in every output type), stores it with
the plan's register -> shared code into one of ``stages`` shared tiles, fences, meets the others at a named
barrier, and one thread issues the plan's TMA store and commits it. A tile is written again only after thread 0's
``cp.async.bulk.wait_group.read`` says the store that read it has. Timed with CUDA events beside the driver's
``cuMemsetD32Async`` of the same bytes (the write-only roofline) in the same run, and checked element by element."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.smem_ldst.epilogue import EpiloguePlan
from ..errors import CompileError
from ..sim.convert import round_f32
from ..tensor.tile import mode_extents, whole_array_modes
from ..tensor.values import smem_bytes_needed

__all__ = ["EpilogueStream", "stream_value", "memset_ms"]

#: The fragment value of (thread, value, tile): a small integer every output type holds exactly.
PATTERN = 15
BIAS = 8


def stream_value(thread: np.ndarray, value: np.ndarray, tile: np.ndarray, values: int) -> np.ndarray:
    """What the stream kernel stores for value ``value`` of ``thread`` in tile number ``tile``."""
    return (((thread * values + value + tile) & PATTERN) - BIAS).astype(np.float32)


@attrs.frozen
class EpilogueStream:
    """Write a 2-D row-major array tile by tile with ``plan`` (its tile a ring of ``stages`` shared tiles, indexed by
    a run-time ``stage``), ``ctas_per_sm`` persistent CTAs per SM."""

    plan: EpiloguePlan
    ctas_per_sm: int = 1

    def __attrs_post_init__(self) -> None:
        stages = self.plan.store.stages
        if len(stages) != 1 or len(self.plan.tile_shape) != 2 or self.plan.store.fragment.dtype.name != "f32":
            raise CompileError("EpilogueStream: an epilogue of f32 registers into a 2-D array through a ring of "
                               "tiles (tile[:, :, dynamic('stage')])")

    @property
    def stages(self) -> int:
        return self.plan.store.stages[0].extent

    @property
    def smem_bytes(self) -> int:
        s = self.plan.store.stages[0]
        return smem_bytes_needed(self.plan.store.smem) + (s.extent - 1) * s.smem_step

    @property
    def tiles(self) -> tuple[int, int]:
        modes = whole_array_modes(self.plan.tma.gmem, "EpilogueStream")
        return tuple(-(-n // t) for (n, _), t in zip(modes, self.plan.tile_shape))  # type: ignore[return-value]

    def source(self) -> str:
        ep, s = self.plan, self.stages
        values, threads = ep.store.values, ep.threads
        rows, cols = ep.tile_shape
        return ep.cuda("ep") + f"""
extern "C" __global__ void __launch_bounds__({threads}) epilogue_stream(const pycute_tensor_map* map, int tiles0,
                                                                          int tiles1) {{
  extern __shared__ unsigned char raw[];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  const unsigned t = threadIdx.x;
  if (t == 0) pycute_tensormap_acquire(map);
  const int total = tiles0 * tiles1;
  const int n = total > (int)blockIdx.x ? (total - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x : 0;
  for (int k = 0; k < n; ++k) {{
    const int g = (int)blockIdx.x + k * (int)gridDim.x;
    float frag[{values}];
#pragma unroll
    for (int v = 0; v < {values}; ++v)
      frag[v] = (float)((int)((t * {values}u + v + (unsigned)g) & {PATTERN}u) - {BIAS});
    if (k >= {s}) {{                                  // the stage's previous store has read the tile
      if (t == 0) pycute_bulk_wait_group_read<{s - 1}>();
      pycute_named_barrier_sync({ep.barrier_id}u, {threads}u);
    }}
    ep(map, base, t, frag, (g / tiles1) * {rows}, (g % tiles1) * {cols}, (unsigned)(k % {s}));
  }}
  if (t == 0) pycute_bulk_wait_group<0>();
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def tile_images(self) -> np.ndarray:
        """``(16, rows, cols)``: tile ``g``'s elements (as unsigned integers of their width) are image ``g % 16``."""
        store = self.plan.store
        rows, cols = mode_extents(store.smem.layout)
        conv = store.conversion
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[store.elem_bytes]
        r, c = store.table % rows, store.table // rows
        out = np.zeros((PATTERN + 1, rows, cols), dtype=dtype)
        for phase in range(PATTERN + 1):
            bits = stream_value(np.arange(store.threads)[:, None], np.arange(store.values)[None, :],
                                np.full(1, phase), store.values).view(np.uint32)
            out[phase, r, c] = round_f32(bits, conv.dst, conv.satfinite).astype(dtype) if conv else bits
        return out

    def check(self, array: np.ndarray) -> bool:
        """Whether the array's bytes (row-major, downloaded) are what the stream writes: tile ``g`` (row-major over
        the tiles) holds image ``g % 16``."""
        images = self.tile_images()
        t0, t1 = self.tiles
        rows, cols = images.shape[1:]
        view = np.asarray(array).view(images.dtype).reshape(t0, rows, t1, cols)
        if t1 % (PATTERN + 1) == 0:                    # the image of tile (i, j) is j % 16: compare in place
            blocks = view.reshape(t0, rows, t1 // (PATTERN + 1), PATTERN + 1, cols)
            return all(np.array_equal(blocks[:, :, :, p, :], np.broadcast_to(
                images[p][None, :, None, :], blocks[:, :, :, p, :].shape)) for p in range(PATTERN + 1))
        g = np.arange(t0 * t1).reshape(t0, t1) & PATTERN
        return all(np.array_equal(view[i, :, j, :], images[g[i, j]]) for i in range(t0) for j in range(t1))

    def run(self, gpu: Gpu, dst: Any, repeats: int = 5, arch: str = "sm_90a") -> float:
        """Write device buffer ``dst`` (the array) ``repeats`` times after a warm-up; the fastest run's ms."""
        gpu = check_gpu(gpu)
        t0, t1 = self.tiles
        modes = whole_array_modes(self.plan.tma.gmem, "EpilogueStream")
        if any(n % t for (n, _), t in zip(modes, self.plan.tile_shape)) or modes[1][1] != 1:
            raise CompileError("EpilogueStream: a row-major array of whole tiles")
        tmap = gpu.upload(np.frombuffer(tensor_map_bytes(self.plan.tma.tensor_map.encode(int(dst.handle))),
                                        dtype=np.uint8))
        kernel = gpu.kernel(self.compile(arch), "epilogue_stream")
        grid = gpu.multiprocessors() * self.ctas_per_sm
        args = (tmap, np.int32(t0), np.int32(t1))
        smem = self.smem_bytes + 1024
        gpu.launch(kernel, *args, grid=grid, block=self.plan.threads, dynamic_smem=smem)
        return min(float(gpu.launch(kernel, *args, grid=grid, block=self.plan.threads, dynamic_smem=smem,
                                    events=True) or 0.0) for _ in range(repeats))


def memset_ms(gpu: Gpu, dst: Any, nbytes: int, repeats: int = 5) -> float:
    """The driver's cuMemsetD32Async of ``nbytes`` (the write-only roofline), fastest of ``repeats`` after a
    warm-up, timed with CUDA events."""
    from cuda.bindings import driver
    from cuda.core import EventOptions
    from ..compile.runtime import _timing_options
    times = []
    for _ in range(repeats + 1):
        start, stop = (gpu.device.create_event(_timing_options(EventOptions)) for _ in range(2))
        gpu.stream.record(start)
        driver.cuMemsetD32Async(int(dst.handle), 0x3C003C00, nbytes // 4, int(gpu.stream.handle))
        gpu.stream.record(stop)
        gpu.stream.sync()
        times.append(stop - start)
    return min(times[1:])
