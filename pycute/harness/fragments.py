"""Round trips of the register-fragment plans (docs/fragments.md), each a kernel with one input buffer and one output
buffer that runs on a GPU (``pycute.compile.runtime.Gpu``) or whole on the CPU (``pycute.interp.run_kernel``):

* ``CoordsRoundTrip``: every thread writes, for each of its values, ``<name>_row`` / ``<name>_col``, what
  ``<name>_for_each`` hands its lambda and the value's row slot; they must be ``fragment_coords``' tables.
* ``ReduceRoundTrip``: every thread loads its values and a running state and writes what each of a reduction plan's
  six functions leaves; they must be ``ReducePlan.reference``'s, bit for bit (NaN as NaN).

The accumulator -> A operand chain is ``pycute.harness.fragment_chain``.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..errors import CompileError
from ..mma.reduce import ReducePlan
from ..tensor.coords import FragmentCoords

__all__ = ["CoordsRoundTrip", "ReduceRoundTrip", "same_floats", "reduce_inputs", "REDUCE_OUTPUTS"]

#: ReduceRoundTrip's outputs per slot, in order.
REDUCE_OUTPUTS = ("max", "sum", "max_partial", "sum_partial", "allreduce_max", "allreduce_sum")


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


def reduce_inputs(threads: int, values: int, slots: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, max state, sum state), f32: magnitudes over 2^-20 .. 2^20 (sums round at every step), and in the
    first warp's values +-0, +-inf and NaN (the special cases of ``max.f32`` and ``add``)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((threads, values)) * np.exp2(rng.integers(-20, 21, (threads, values)))).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0], dtype=np.float32)
    x[:min(threads, 32), :min(values, 8)] = rng.choice(specials, (min(threads, 32), min(values, 8)))
    m0 = np.where(rng.random((threads, slots)) < 0.25, -np.inf,
                  rng.standard_normal((threads, slots)) * 8).astype(np.float32)
    l0 = (rng.standard_normal((threads, slots)) * 4).astype(np.float32)
    return x, m0, l0


def same_floats(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: the same f32 bits, or both NaN (PTX leaves a NaN result's payload open)."""
    g, w = np.asarray(got, dtype=np.float32), np.asarray(want, dtype=np.float32)
    return (g.view(np.uint32) == w.view(np.uint32)) | (np.isnan(g) & np.isnan(w))


@attrs.frozen
class ReduceRoundTrip:
    """``plan``'s functions (named ``name``) against ``plan.reference``: thread ``t`` loads its values and running
    states, and writes, slot by slot, the results of ``_max``, ``_sum`` (from the states), ``_max_partial``,
    ``_sum_partial`` (from the states) and the two ``_allreduce_`` of the partials."""

    plan: ReducePlan
    name: str = "frag"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, ReducePlan):
            raise CompileError("ReduceRoundTrip: a ReducePlan (make_reduction(...))")

    @property
    def threads(self) -> int:
        return self.plan.fragment.threads

    @property
    def slots(self) -> int:
        return len(self.plan.slots)

    @property
    def out_words(self) -> int:
        return self.threads * self.slots * len(REDUCE_OUTPUTS)

    def inputs(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return reduce_inputs(self.threads, self.plan.coords.values, self.slots, seed)

    def input(self, seed: int = 0) -> np.ndarray:
        """The kernel's input bytes: every thread's values, then its max states, then its sum states."""
        return np.concatenate([a.reshape(-1) for a in self.inputs(seed)]).view(np.uint8)

    def source(self, entry: str = "reduce_roundtrip") -> str:
        n, ax, values, slots, t = self.name, self.plan.axis, self.plan.coords.values, self.slots, self.threads
        f = f"{n}_{ax}"
        return self.plan.cuda(n) + f"""
extern "C" __global__ void __launch_bounds__({t}, 1) {entry}(const float* in, float* out) {{
  const unsigned t = threadIdx.x;
  float x[{values}], m[{slots}], l[{slots}], pm[{slots}], pl[{slots}];
#pragma unroll
  for (int v = 0; v < {values}; ++v) x[v] = in[t * {values}u + v];
#pragma unroll
  for (int s = 0; s < {slots}; ++s) {{
    m[s] = pm[s] = in[{t * values}u + t * {slots}u + s];
    l[s] = pl[s] = in[{t * (values + slots)}u + t * {slots}u + s];
  }}
  {f}_max(x, m);
  {f}_sum(x, l);
  {f}_max_partial(x, pm);
  {f}_sum_partial(x, pl);
  float am[{slots}], al[{slots}];
#pragma unroll
  for (int s = 0; s < {slots}; ++s) {{ am[s] = pm[s]; al[s] = pl[s]; }}
  {f}_allreduce_max(am);
  {f}_allreduce_sum(al);
  float* mine = out + t * {slots * len(REDUCE_OUTPUTS)}u;
#pragma unroll
  for (int s = 0; s < {slots}; ++s) {{
    mine[s] = m[s]; mine[{slots} + s] = l[s]; mine[{2 * slots} + s] = pm[s];
    mine[{3 * slots} + s] = pl[s]; mine[{4 * slots} + s] = am[s]; mine[{5 * slots} + s] = al[s];
  }}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def expected(self, seed: int = 0) -> np.ndarray:
        """(threads, 6, slots) f32: ``REDUCE_OUTPUTS`` from ``plan.reference``."""
        x, m0, l0 = self.inputs(seed)
        p = self.plan
        pm, pl = p.reference("max", x, m0, lanes=False), p.reference("sum", x, l0, lanes=False)
        return np.stack([p.reference("max", x, m0), p.reference("sum", x, l0), pm, pl, p.allreduce("max", pm),
                         p.allreduce("sum", pl)], axis=1)

    def got(self, out: np.ndarray) -> np.ndarray:
        return np.asarray(out).view(np.float32).reshape(self.threads, len(REDUCE_OUTPUTS), self.slots)

    def run(self, gpu: Gpu, seed: int = 0, arch: str = "sm_90a") -> np.ndarray:
        out = check_gpu(gpu).run(self.compile(arch).cubin, "reduce_roundtrip", grid=1, block=self.threads,
                                 dynamic_smem=0, inputs=self.input(seed), out_words=self.out_words)
        return self.got(out)

