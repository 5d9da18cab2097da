"""A Blackwell epilogue from plans alone: TMA load -> tcgen05.cp -> tcgen05.ld -> scale, convert to bf16 ->
swizzled shared -> TMA store. No shared address, register grouping or conversion is written by hand:

* the f32 input tile (128 x 32, 128B-swizzled, as TMA writes it) comes in by a TMA load plan;
* ``make_tiled_copy`` plans the ``tcgen05.cp`` into TMEM and ``make_tmem_copy`` the ``tcgen05.ld`` back, whose
  ``fragment`` says which register holds which element;
* ``make_epilogue`` takes that fragment, the bf16 output tile and the output array: the register -> shared plan
  (the conversion ``cvt.rn.bf16x2.f32`` packing the registers it names, every 16-byte ``st.shared.v4`` address from
  the tile's swizzle), the proxy fence, the barrier and the TMA store of the tile.

The kernel multiplies by ``scale`` in between: that is the only arithmetic the user writes. In CI it builds for
sm_100a (SASS: exactly the planned UTCCP, LDTM, STS.128 and UTMASTG) and, with ``-DPYCUTE_SOFT_TCGEN05``, for
sm_90a; the emulator runs the same plans on the CPU and the PTX interpreter reads the compiled stream back.
``python examples/epilogue.py`` prints the plans and the sm_100a SASS summary.
"""
from __future__ import annotations

import numpy as np

import pycute as pc
import pycute.testing as pt
from pycute import Layout, TCol, TLane
from pycute.copy.smem_ldst import make_epilogue
from pycute.sim.emulator import Sm100Emulator
from pycute.sim.verify import run_tmem_copy
from pycute.sim.verify_smem import run_epilogue

ROWS, COLS = 128, 32                 # one tile: 128 lanes x 32 f32 columns
M, N = 512, 256                      # the arrays: 4 x 8 tiles


class Epilogue:
    """The plans, the kernel source, and what the layouts say the kernel leaves."""

    def __init__(self):
        self.input = pc.make_global_tensor(pc.f32, Layout((M, N), (N, 1)))
        self.output = pc.make_global_tensor(pc.bf16, Layout((M, N), (N, 1)))
        self.in_tile = pc.kmajor_smem_tensor(pc.f32, ROWS, COLS, "128B")
        self.out_tile = pc.kmajor_smem_tensor(pc.bf16, ROWS, COLS, "64B")
        self.tmem = pc.make_tmem_tensor(pc.f32, Layout((ROWS, COLS), (TLane, TCol)), columns=32)
        self.load = pc.make_tma_copy(self.in_tile, self.input)
        self.cp = pc.make_tiled_copy(self.tmem, self.in_tile)
        self.ld = pc.make_tmem_copy(self.tmem, "ld", warps=4)
        fragment = pc.make_fragment(pc.f32, 128, self.ld.fragment, shape=(ROWS, COLS))
        self.epilogue = make_epilogue(fragment, self.out_tile, self.output)

    @property
    def in_bytes(self) -> int:
        return -(-self.load.expect_tx // 1024) * 1024

    def source(self) -> str:
        regs = self.ld.registers
        return "\n".join([self.load.cuda("load_in"), self.cp.cuda("copy_in"), self.ld.cuda("read_acc"),
                          self.epilogue.cuda("epi")]) + f"""
extern "C" __global__ void __launch_bounds__(128, 1)
blackwell_epilogue(const pycute_tensor_map* in_map, const pycute_tensor_map* out_map, float scale, int m0, int n0) {{
  extern __shared__ unsigned char raw[];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long bars[2];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  const unsigned in_smem = base, out_smem = base + {self.in_bytes}u;
  const unsigned char* in_tile = raw + (base - pycute_smem_address(raw));     // the same bytes, generic address
  const unsigned warp = pycute_warp_index(), t = threadIdx.x;
  const unsigned loaded = pycute_smem_address(&bars[0]), copied = pycute_smem_address(&bars[1]);
  if (warp == 0) {{
    pycute_tmem_alloc<1>(pycute_smem_address(&tmem_slot), 32u);
    pycute_tmem_relinquish_alloc_permit<1>();
  }}
  if (t == 0) {{
    pycute_tensormap_acquire(in_map);
    pycute_tensormap_acquire(out_map);
    pycute_mbarrier_init(loaded, 1);
    pycute_mbarrier_init(copied, 1);
  }}
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned tmem = tmem_slot;
  if (t == 0) {{                                                 // TMA load of the f32 tile
    pycute_mbarrier_arrive_expect_tx(loaded, load_in_expect_tx);
    load_in(in_map, in_smem, loaded, m0 / {ROWS}, n0 / {COLS});
  }}
  pycute_mbarrier_wait_parity(loaded, 0);
  if (warp == 0) {{                                              // shared -> TMEM
    copy_in(in_tile, tmem);
    if (pycute_elect_one_sync()) pycute_tcgen05_commit<1>(copied);
  }}
  pycute_mbarrier_wait_parity(copied, 0);
  pycute_tcgen05_fence_after_thread_sync();
  unsigned acc[{regs}];
  read_acc(tmem, acc);                                           // TMEM -> registers (the plan's fragment)
  float frag[{regs}];
  for (unsigned j = 0; j < {regs}u; ++j) frag[j] = __uint_as_float(acc[j]) * scale;
  epi(out_map, out_smem, t, frag, m0, n0);                       // -> bf16 -> shared -> fence -> TMA store
  epi_wait(t);
  if (t == 0) pycute_bulk_wait_group<0>();
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 0) pycute_tmem_dealloc<1>(tmem, 32u);
}}
"""

    @property
    def smem_bytes(self) -> int:
        return self.in_bytes + self.epilogue.store.smem.layout.cosize() * 2 + 2048

    def compile(self, arch: str = "sm_100a", soft: bool = False):
        return pc.compile.compile_cuda(self.source(), arch=arch,
                                       options=("-DPYCUTE_SOFT_TCGEN05",) if soft else ())

    def inputs(self, seed: int = 0) -> np.ndarray:
        return (np.random.default_rng(seed).standard_normal((M, N)) * 8).astype(np.float32)

    def expected(self, x: np.ndarray, scale: float, origin: tuple[int, int], out: np.ndarray) -> np.ndarray:
        """The output array's bytes: the tile at ``origin`` is ``bf16(x * scale)``, the rest ``out`` unchanged."""
        want = out.view(np.uint16).reshape(M, N).copy()
        m0, n0 = origin
        tile = pt.epilogue(x[m0:m0 + ROWS, n0:n0 + COLS], alpha=float(np.float32(scale)), out="bf16")
        want[m0:m0 + ROWS, n0:n0 + COLS] = pt.to_codes(tile, "bf16")
        return want.view(np.uint8).ravel()

    def emulate(self, x: np.ndarray, scale: float, origin: tuple[int, int], out: np.ndarray) -> np.ndarray:
        """The plans in the emulator: TMA load, tcgen05.cp, tcgen05.ld, the scale (f32), the epilogue."""
        emu = Sm100Emulator(smem_bytes=self.smem_bytes)
        base = 0
        emu.tma_load(self.load.tensor_map, x.view(np.uint8).ravel(), self.load.stream(base, origin[0] // ROWS,
                                                                                     origin[1] // COLS)[0].coords,
                     base)
        col = emu.alloc(32)
        emu.run(self.cp.stream(base, col))
        acc = run_tmem_copy(emu, self.ld, col)
        frag = (acc.view(np.float32) * np.float32(scale)).astype(np.float32).view(np.uint32)
        gmem = out.copy()
        run_epilogue(emu, self.epilogue, frag, gmem, origin, smem_base=0)
        return gmem

    def run(self, gpu, arch: str, soft: bool, scale: float = 0.37, origin=(256, 96), seed: int = 0):
        """Run on ``gpu``: ``(output bytes, expected bytes)``."""
        from pycute.compile.runtime import tensor_map_bytes
        x = self.inputs(seed)
        out = np.random.default_rng(seed + 1).integers(0, 256, M * N * 2, dtype=np.uint8)
        d_in, d_out = gpu.upload(x), gpu.upload(out)
        maps = [gpu.upload(np.frombuffer(tensor_map_bytes(p.tensor_map.encode(int(b.handle))), dtype=np.uint8))
                for p, b in ((self.load, d_in), (self.epilogue.tma, d_out))]
        kernel = gpu.kernel(self.compile(arch, soft), "blackwell_epilogue")
        gpu.launch(kernel, maps[0], maps[1], np.float32(scale), np.int32(origin[0]), np.int32(origin[1]), grid=1,
                   block=128, dynamic_smem=self.smem_bytes)
        return gpu.download(d_out, np.uint8, out.size), self.expected(x, scale, origin, out)


def main() -> None:
    example = Epilogue()
    for plan in (example.load, example.cp, example.ld):
        print(plan.explain(), end="\n\n")
    print(example.epilogue.explain())
    sass = example.compile("sm_100a").histogram()
    print("sm_100a SASS:", {op: n for op, n in sorted(sass.items())
                            if op.startswith(("UTCCP", "LDTM", "STS", "UTMA", "F2FP", "FENCE"))})


if __name__ == "__main__":
    main()
