"""Round trips for tcgen05.ld/st plans, on the header (so ``-DPYCUTE_SOFT_TCGEN05`` runs them without tcgen05):

* ``LdStRoundTrip(ld, cp=plan)``: a shared buffer is copied into TMEM by a cp plan, then read with the ld plan;
  value v of thread t must be the source element at ``ld.fragment(t, v)``;
* ``LdStRoundTrip(ld, st=plan)``: registers are stored with the st plan and read back with the ld plan; each
  coordinate must come back with the value the st wrote for it.

cta_group 2 runs a 2-CTA cluster (a cta_group::2 allocation and, with a cp plan, the even CTA's copy into both).
"""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..tensor.values import smem_element_offsets
from ..copy.tcgen05_ldst.plan import Tcgen05LdStPlan
from ..errors import CompileError
from ..codegen.templates import render
from ..compile.nvrtc import Compiled

__all__ = ["LdStRoundTrip"]


def _value_bits(plan: Tcgen05LdStPlan) -> int:
    return 16 if plan.pack else plan.tensor.bits if plan.per_cell > 1 else min(plan.tensor.bits, 32)


def _registers(plan: Tcgen05LdStPlan, values: np.ndarray) -> np.ndarray:
    """(threads, registers) uint32: each register's values (coordinate ``plan.table``) packed from the low bits."""
    vpr, vbits = plan.values_per_register, _value_bits(plan)
    v = values[plan.table].astype(np.uint64).reshape(plan.table.shape[0], plan.registers, vpr)
    return (v << (np.arange(vpr, dtype=np.uint64) * np.uint64(vbits))).sum(axis=2).astype(np.uint32)


@attrs.frozen
class LdStRoundTrip:
    ld: Tcgen05LdStPlan
    cp: Tcgen05CpPlan | None = None
    st: Tcgen05LdStPlan | None = None
    cta_group: int = 1
    name: str = "rt"

    def __attrs_post_init__(self):
        if (self.cp is None) == (self.st is None):
            raise CompileError("LdStRoundTrip: give a cp plan or an st plan to fill TMEM before the ld")
        if self.cp is not None and self.cp.cta_group != self.cta_group:
            raise CompileError("LdStRoundTrip: the cp plan's cta_group is the round trip's")
        if self.cp is not None and self.cp.src.bits not in (8, 16, 32):
            raise CompileError("LdStRoundTrip: the source is filled element by element (8, 16, 32 bits)")

    @property
    def entry(self) -> str:
        return f"{self.name}_ldst"

    @property
    def threads(self) -> int:
        return 32 * self.ld.warps

    @property
    def smem_bytes(self) -> int:
        return 1024 if self.cp is None else -(-self.cp.smem_end // 1024) * 1024

    def source(self) -> str:
        g = self.cta_group
        functions = [self.ld.cuda("rt_ld")]
        if self.cp is not None:
            functions.insert(0, self.cp.cuda("rt_cp"))
            body = (f"  if (warp == 0{' && (cta & 1u) == 0u' if g == 2 else ''}) {{\n    rt_cp(buffer, taddr);\n"
                    f"    if (pycute_elect_one_sync()) pycute_tcgen05_commit<{g}>(mbar);\n  }}\n"
                    f"  pycute_mbarrier_wait_parity(mbar, 0);\n  pycute_tcgen05_fence_after_thread_sync();\n")
            what = f"{self.cp.atom.ptx} then {self.ld.per_warp[0].ptx}"
        else:
            assert self.st is not None                 # __attrs_post_init__: exactly one of cp and st
            functions.insert(0, self.st.cuda("rt_st"))
            body = (f"  for (unsigned i = 0; i < {self.st.registers}u; ++i) regs[i] = regs_in[(cta * blockDim.x + tid) * "
                    f"{self.st.registers}u + i];\n  rt_st(taddr, regs);\n  pycute_tcgen05_fence_before_thread_sync();\n"
                    f"  __syncthreads();\n  pycute_tcgen05_fence_after_thread_sync();\n")
            what = f"{self.st.per_warp[0].ptx} then {self.ld.per_warp[0].ptx}"
        body += "  rt_ld(taddr, regs);"
        columns = max(32, self.ld.tensor.columns or 32)
        return render("ldst_roundtrip.cu", smem_bytes=self.smem_bytes, tmem_cols=columns,
                      registers=max(self.ld.registers, self.st.registers if self.st else 0),
                      functions="\n".join(functions), threads=self.threads, what=what, name=self.name,
                      cluster=" __cluster_dims__(2, 1, 1)" if g == 2 else "", cta_group=g,
                      sync="pycute_cluster_sync();" if g == 2 else "__syncthreads();", body=body)

    def compile(self, arch: str = "sm_100a", soft: bool = False) -> Compiled:
        return compile_cuda(self.source(), arch=arch, options=("-DPYCUTE_SOFT_TCGEN05",) if soft else ())

    def inputs(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(shared-memory images per CTA, st registers per CTA, the values each coordinate holds per CTA)``."""
        rng = np.random.default_rng(seed)
        ctas, size = self.cta_group, self.ld.tensor.layout.size()
        images = rng.integers(0, 256, (ctas, self.smem_bytes), dtype=np.uint8)
        if self.cp is not None:
            src = self.cp.src
            elem = smem_element_offsets(src) * (src.bits // 8)
            coords = np.zeros((ctas, size), dtype=np.uint64)
            for k in range(src.bits // 8):
                coords |= images[:, elem + k].astype(np.uint64) << np.uint64(8 * k)
            return images, np.zeros((ctas, self.threads, 1), np.uint32), coords
        assert self.st is not None                     # __attrs_post_init__: exactly one of cp and st
        vbits = _value_bits(self.st)
        coords = rng.integers(0, 1 << vbits, (ctas, size), dtype=np.uint64)
        regs = np.stack([_registers(self.st, c) for c in coords])
        return images, regs, coords

    def expected(self, coords: np.ndarray) -> np.ndarray:
        return np.stack([_registers(self.ld, c) for c in coords])

    def run(self, gpu: Gpu, arch: str, soft: bool = True, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(got, expected)``: (ctas, threads, registers) uint32."""
        gpu = check_gpu(gpu)
        images, regs, coords = self.inputs(seed)
        kernel = gpu.kernel(self.compile(arch, soft), self.entry)
        words = self.cta_group * self.threads * self.ld.registers
        d_img, d_regs = gpu.upload(images.reshape(-1)), gpu.upload(regs.reshape(-1))
        d_out = gpu.upload(np.full(words, 0xFFFFFFFF, dtype=np.uint32))
        gpu.launch(kernel, d_img, d_regs, d_out, grid=self.cta_group, block=self.threads, dynamic_smem=self.smem_bytes + 1024)
        got = gpu.download(d_out, np.uint32, words).reshape(self.cta_group, self.threads, self.ld.registers)
        return got, self.expected(coords)
