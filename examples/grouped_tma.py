"""A grouped GEMM's A and C tiles through TMA, with groups at rows that are not tile multiples (0, 77, 300, 811).

One tensor map per array serves every group, two ways, both planned by pycute from the layouts:

* A's tile loaded at element coordinates (``origin=(row, k)``) through A's one map: any row, no per-group map; the
  rows past a group are the next group's (a grouped GEMM masks them later);
* a map per CTA retargeted on the device (``plan.retarget(extents=(rows, None))``: the group's base address and row
  count written with ``tensormap.replace`` into the CTA's map in global memory), so a load fills zeros past the
  group and a store writes nothing past it.

CTA ``w`` takes work item ``(row0, rows, i, j)`` (group rows ``[row0, row0 + rows)``, row tile ``i``, k tile ``j``):
it loads A's tile both ways, dumps both shared tiles, and stores the group-bounded one into C through C's group
map. C then equals A inside every group and keeps its marker outside. ``python examples/grouped_tma.py`` prints
the plans and runs the CPU check (the sm_90a build, its PTX interpreted for every work item, the emulator replaying
the retarget edits, loads and stores); ``python -m tools tma_coordinates`` and ``tests/gpu/test_gpu_tma.py`` run it on
the H200.
"""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

import pycute as pc
from pycute import Layout
from pycute.compile import compile_cuda
from pycute.sim.emulator import Sm90Emulator
from pycute.sim.executors.tma import TensorMap, TensorMapEdit, TensorMapPublish, replace_field
from pycute.interp.stream import trace_entry
from pycute.tensor.values import smem_element_offsets

ROWS, K = 1024, 128                       # A and C: ROWS x K bf16, row-major
GROUPS = ((0, 60), (77, 173), (300, 400), (811, 189))      # (first row, rows): gaps between them stay untouched
TILE_M, TILE_K = 128, 64
ELEM = 2
TILE_BYTES = TILE_M * TILE_K * ELEM
MARKER = 0xA5                             # C's bytes before the kernel (rows outside every group keep it)
SMEM = 2 * TILE_BYTES + 2 * 128 + 16      # two tiles, two map scratch areas, the mbarrier
# The interpreter's addresses for the CPU check (any 16-byte-aligned values do).
A_BASE, C_BASE, WS_BASE, MAP_A, MAP_C, SMEM_BASE = 0x1000_0000, 0x2000_0000, 0x3000_0000, 0x4000_0000, 0x4100_0000, 0


@attrs.frozen
class Work:
    """One CTA's tile: group rows ``[row0, row0 + rows)``, row tile ``i`` of the group, k tile ``j``."""

    row0: int
    rows: int
    i: int
    j: int


class GroupedTma:
    """The plans (A's element-coordinate load, C's store, both retargeted per group) and the kernel."""

    def __init__(self) -> None:
        self.a = pc.make_global_tensor(pc.bf16, Layout((ROWS, K), (K, 1)))
        self.c = pc.make_global_tensor(pc.bf16, Layout((ROWS, K), (K, 1)))
        self.tile = pc.kmajor_smem_tensor(pc.bf16, TILE_M, TILE_K, "128B")
        at = (pc.dynamic("row"), pc.dynamic("k"))
        self.load = pc.make_tma_copy(self.tile, self.a, origin=at)
        self.store = pc.make_tma_copy(self.c, self.tile, origin=at)
        self.retarget_a = self.load.retarget(extents=(pc.dynamic("rows"), None))
        self.retarget_c = self.store.retarget(extents=(pc.dynamic("rows"), None))

    def work(self) -> list[Work]:
        return [Work(r0, n, i, j) for r0, n in GROUPS for i in range(-(-n // TILE_M)) for j in range(K // TILE_K)]

    def source(self) -> str:
        strip = lambda text: text.replace('#include "pycute/tma.cuh"\n', "")      # noqa: E731
        return (self.load.cuda("load_a") + strip(self.store.cuda("store_c"))
                + strip(self.retarget_a.cuda("retarget_a")) + strip(self.retarget_c.cuda("retarget_c")) + f"""
// One work item, all {128} threads: retarget both maps (warp 0), load A's tile through A's one map and through the
// group's map, dump both, store the group's tile into C through C's group map.
__device__ __forceinline__ void grouped_tile(const pycute_tensor_map* a_map, const pycute_tensor_map* c_map,
    pycute_tensor_map* ws, const unsigned char* a, unsigned char* c, int row0, int rows, int i, int j,
    unsigned char* dump_one, unsigned char* dump_group) {{
  extern __shared__ unsigned char raw[];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned one = base, group = base + {TILE_BYTES}u, smap_a = base + {2 * TILE_BYTES}u;
  const unsigned smap_c = smap_a + 128u, mbar = smap_a + 256u;
  const unsigned warp = pycute_warp_index();
  if (threadIdx.x == 0) pycute_mbarrier_init(mbar, 1);
  __syncthreads();
  if (warp == 0) {{
    retarget_a(a_map, &ws[0], smap_a, a + (long long)row0 * {K * ELEM}{"".join(", " + n for n in self.retarget_a.names)});
    retarget_c(c_map, &ws[1], smap_c, c + (long long)row0 * {K * ELEM}{"".join(", " + n for n in self.retarget_c.names)});
    if (pycute_elect_one_sync()) {{
      pycute_tensormap_acquire(a_map);
      pycute_tensormap_acquire_gpu(&ws[0]);
      pycute_tensormap_acquire_gpu(&ws[1]);
      pycute_mbarrier_arrive_expect_tx(mbar, 2u * load_a_expect_tx);
      load_a(a_map, one, mbar, row0 + {TILE_M} * i, {TILE_K} * j);
      load_a(&ws[0], group, mbar, {TILE_M} * i, {TILE_K} * j);
    }}
  }}
  pycute_mbarrier_wait_parity(mbar, 0);
  for (unsigned b = threadIdx.x; b < {TILE_BYTES}u; b += blockDim.x) {{
    dump_one[b] = buf[b];
    dump_group[b] = buf[{TILE_BYTES}u + b];
  }}
  __syncthreads();
  if (warp == 0 && pycute_elect_one_sync()) {{
    store_c(&ws[1], group, {TILE_M} * i, {TILE_K} * j);
    pycute_bulk_wait_group<0>();
  }}
}}

extern "C" __global__ void __launch_bounds__(128) grouped(const pycute_tensor_map* a_map,
    const pycute_tensor_map* c_map, pycute_tensor_map* workspace, const unsigned char* a, unsigned char* c,
    const int* work, unsigned char* dump_one, unsigned char* dump_group) {{
  const int* w = work + 4 * blockIdx.x;
  grouped_tile(a_map, c_map, workspace + 2 * blockIdx.x, a, c, w[0], w[1], w[2], w[3],
               dump_one + (size_t)blockIdx.x * {TILE_BYTES}u, dump_group + (size_t)blockIdx.x * {TILE_BYTES}u);
}}

// The same work for one item given as parameters (what the CPU check interprets).
extern "C" __global__ void __launch_bounds__(128) grouped_one(const pycute_tensor_map* a_map,
    const pycute_tensor_map* c_map, pycute_tensor_map* ws, const unsigned char* a, unsigned char* c, int row0,
    int rows, int i, int j, unsigned char* dump_one, unsigned char* dump_group) {{
  grouped_tile(a_map, c_map, ws, a, c, row0, rows, i, j, dump_one, dump_group);
}}
""")

    def compile(self, arch: str = "sm_90a", checked: bool = False) -> Any:
        return compile_cuda(self.source(), arch=arch, checked=checked)

    # -- what the layouts say ----------------------------------------------------------------------------------
    def arrays(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """A's bytes (random) and C's (the marker)."""
        rng = np.random.default_rng(seed)
        return rng.integers(0, 256, ROWS * K * ELEM, dtype=np.uint8), np.full(ROWS * K * ELEM, MARKER, np.uint8)

    def expected(self, a: np.ndarray, w: Work, group_bound: bool) -> np.ndarray:
        """The shared tile (its bytes in the swizzled order TMA writes) of item ``w`` through A's one map, or
        through the group's map (rows past the group zero)."""
        rows = a.reshape(ROWS, K * ELEM)
        tile = np.zeros((TILE_M, TILE_K * ELEM), np.uint8)
        first = w.row0 + TILE_M * w.i
        last = min(w.row0 + w.rows, ROWS) if group_bound else ROWS
        for r in range(TILE_M):
            if first + r < last:
                tile[r] = rows[first + r, TILE_K * ELEM * w.j:TILE_K * ELEM * (w.j + 1)]
        offsets = smem_element_offsets(self.tile) * ELEM
        out = np.zeros(TILE_BYTES, np.uint8)
        flat = tile.reshape(TILE_M * TILE_K, ELEM)
        for e, off in enumerate(offsets):                     # element (m, k) of the tile, colexicographic
            m, k = e % TILE_M, e // TILE_M
            out[off:off + ELEM] = flat[m * TILE_K + k]
        return out

    def expected_c(self, a: np.ndarray) -> np.ndarray:
        c = np.full(ROWS * K * ELEM, MARKER, np.uint8).reshape(ROWS, K * ELEM)
        for r0, n in GROUPS:
            c[r0:r0 + n] = a.reshape(ROWS, K * ELEM)[r0:r0 + n]
        return c.reshape(-1)

    # -- the CPU check: the compiled code, interpreted, replayed in the emulator -----------------------------------
    def trace(self, compiled: Any, w: Work) -> Any:
        """Thread 0 of ``grouped_one`` for item ``w`` (the issuing thread of warp 0)."""
        params = {0: MAP_A, 1: MAP_C, 2: WS_BASE, 3: A_BASE, 4: C_BASE, 5: w.row0, 6: w.rows, 7: w.i, 8: w.j,
                  9: 0, 10: 0}
        return trace_entry(compiled.ptx, params, {"raw": SMEM_BASE}, "grouped_one")

    def emulate(self, compiled: Any, a: np.ndarray, c: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Every item's two shared tiles, from its traced stream replayed in the emulator (the maps as fields: the
        retarget's edits applied to a copy of A's or C's map, published to the CTA's workspace); ``c`` is stored
        into."""
        out = []
        for w in self.work():
            t = self.trace(compiled, w)
            edits = [r for r in t.tensormap if isinstance(r, TensorMapEdit)]
            smap_a, smap_c = dict.fromkeys(r.map_address for r in edits)           # retarget_a's, then retarget_c's
            scratch = {smap_a: TensorMap(self.load.tensor_map, A_BASE), smap_c: TensorMap(self.store.tensor_map, C_BASE)}
            for r in edits:
                scratch[r.map_address] = replace_field(scratch[r.map_address], r.field, r.ordinal, r.value)
            ws = {r.gmem: scratch[r.smem] for r in t.tensormap if isinstance(r, TensorMapPublish)}
            emu = Sm90Emulator(smem_bytes=2 * TILE_BYTES, smem_base=SMEM_BASE)
            one, group, store = t.tma
            emu.tma_load(self.load.tensor_map, a, one.coords, one.smem)
            emu.tma_load(ws[WS_BASE].params, a, group.coords, group.smem, address=ws[WS_BASE].address - A_BASE)
            emu.tma_store(ws[WS_BASE + 128].params, c, store.coords, store.smem,
                          address=ws[WS_BASE + 128].address - C_BASE)
            image = emu.ctas[0].smem
            out.append((image[:TILE_BYTES].copy(), image[TILE_BYTES:].copy()))
        return out

    def check_on_cpu(self, seed: int = 0) -> None:
        """The sm_90a build, interpreted and emulated for every item: both tiles and C as the layouts say."""
        a, c = self.arrays(seed)
        tiles = self.emulate(self.compile("sm_90a"), a, c)
        for w, (one, group) in zip(self.work(), tiles):
            assert np.array_equal(one, self.expected(a, w, False)), f"{w}: the one-map tile differs"
            assert np.array_equal(group, self.expected(a, w, True)), f"{w}: the group-bounded tile differs"
        assert np.array_equal(c, self.expected_c(a)), "C differs from A inside a group or was written outside"

    # -- the GPU run ---------------------------------------------------------------------------------------------
    def run(self, gpu: Any, seed: int = 0, checked: bool = False, work: list[Work] | None = None) -> dict:
        """Run ``grouped`` on ``gpu`` for ``work`` (every item by default): ``{"c": (got, want), "one": [(got,
        want)], "group": [(got, want)]}``."""
        from pycute.compile.runtime import tensor_map_bytes
        kernel = gpu.kernel(self.compile("sm_90a", checked), "grouped")
        a, c = self.arrays(seed)
        d_a, d_c = gpu.upload(a), gpu.upload(c)
        maps = [gpu.upload(np.frombuffer(tensor_map_bytes(p.tensor_map.encode(int(d.handle))), np.uint8))
                for p, d in ((self.load, d_a), (self.store, d_c))]
        work = self.work() if work is None else work
        items = np.array([[w.row0, w.rows, w.i, w.j] for w in work], np.int32).reshape(-1)
        d_work = gpu.upload(items)
        d_ws = gpu.upload(np.zeros(len(work) * 2 * 128, np.uint8))
        dumps = [gpu.upload(np.zeros(len(work) * TILE_BYTES, np.uint8)) for _ in range(2)]
        gpu.launch(kernel, *maps, d_ws, d_a, d_c, d_work, *dumps, grid=len(work), block=128,
                   dynamic_smem=SMEM + 1024)
        one, group = (gpu.download(d, np.uint8, len(work) * TILE_BYTES).reshape(len(work), TILE_BYTES)
                      for d in dumps)
        return {"c": (gpu.download(d_c, np.uint8, c.size), self.expected_c(a)),
                "one": [(one[k], self.expected(a, w, False)) for k, w in enumerate(work)],
                "group": [(group[k], self.expected(a, w, True)) for k, w in enumerate(work)]}


if __name__ == "__main__":
    example = GroupedTma()
    print(example.load.explain(), example.retarget_c.explain(), sep="\n\n")
    example.check_on_cpu()
    print(f"\nCPU check: {len(example.work())} work items, both tiles and C as the layouts say")
