"""Round trips of the register-fragment plans (docs/fragments.md), each a kernel with one input buffer and one output
buffer that runs on a GPU (``pycute.compile.runtime.Gpu``) or whole on the CPU (``pycute.interp.run_kernel``):

* ``CoordsRoundTrip``: every thread writes, for each of its values, ``<name>_row`` / ``<name>_col``, what
  ``<name>_for_each`` hands its lambda and the value's row slot; they must be ``fragment_coords``' tables.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..errors import CompileError
from ..tensor.coords import FragmentCoords

__all__ = ["CoordsRoundTrip"]


@attrs.frozen
class CoordsRoundTrip:
    """``coords``' device helpers (named ``name``) against its tables: each thread ``t`` of the fragment writes four
    words per value ``v``: ``row(t, v)``, ``col(t, v)``, the (row, col) ``for_each`` gives for ``v``."""

    coords: FragmentCoords
    name: str = "frag"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.coords, FragmentCoords):
            raise CompileError("CoordsRoundTrip: a FragmentCoords (fragment_coords(...))")

    @property
    def threads(self) -> int:
        return self.coords.threads

    @property
    def out_words(self) -> int:
        return self.threads * self.coords.values * 5

    def source(self, entry: str = "coords_roundtrip") -> str:
        n, values = self.name, self.coords.values
        return self.coords.cuda(n) + f"""
extern "C" __global__ void __launch_bounds__({self.threads}, 1) {entry}(const unsigned char*, int* out) {{
  const unsigned t = threadIdx.x;
  int* mine = out + t * {values * 5}u;
#pragma unroll
  for (int v = 0; v < {n}_values; ++v) {{
    mine[5 * v] = {n}_row(t, v);
    mine[5 * v + 1] = {n}_col(t, v);
    mine[5 * v + 4] = {n}_row_slot(v);
  }}
  {n}_for_each(t, [&](int v, int row, int col) {{ mine[5 * v + 2] = row; mine[5 * v + 3] = col; }});
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def expected(self) -> np.ndarray:
        """(threads, values, 5): row, col, row, col and the row slot, from the tables."""
        c = self.coords
        slot = np.zeros(c.values, dtype=np.int64)
        for s, vs in enumerate(c.slots("row")):
            slot[list(vs)] = s
        return np.stack([c.row, c.col, c.row, c.col, np.broadcast_to(slot, c.row.shape)], axis=-1).astype(np.int32)

    def got(self, out: np.ndarray) -> np.ndarray:
        return np.asarray(out).view(np.int32).reshape(self.threads, self.coords.values, 5)

    def run(self, gpu: Gpu, arch: str = "sm_90a") -> np.ndarray:
        """What the GPU's threads write, as ``expected``'s array."""
        out = check_gpu(gpu).run(self.compile(arch).cubin, "coords_roundtrip", grid=1, block=self.threads,
                                 dynamic_smem=0, inputs=np.zeros(4, dtype=np.uint8), out_words=self.out_words)
        return self.got(out)
