"""The wgmma round trip: shared memory filled with A's and B's elements (exact values laid out through their tiles'
layouts and swizzles on the host, then plain byte stores from global memory), each thread's A registers (A in
registers) and starting D registers loaded from global memory, every warpgroup calling a make_mma plan's generated
function between ``pycute_wgmma_fence`` and ``commit_group`` / ``wait_group<0>``, and every thread's D registers
written back. On an sm_90 GPU (the H200) the MMA is the hardware's: D must equal the emulator's for the same input,
register for register, and through the fragment the reference MMA's. ``WGMMA_CASES`` is the matrix the GPU test and
``python -m tools wgmma`` run."""
from __future__ import annotations

from typing import Literal

import attrs
import numpy as np

from ..arch.sm100.mma import Major
from ..arch.sm90.wgmma import WARPGROUP_THREADS, WGMMA_SASS, WGMMA_TYPES
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..compile.sass import function_instructions
from ..dtypes import dtype as as_dtype
from ..errors import CompileError
from ..mma.wgmma_fragment import wgmma_a_fragment, wgmma_accumulator
from ..mma.wgmma_plan import WgmmaPlan
from ..mma.wgmma_planner import make_wgmma
from ..sim.verify_wgmma import WgmmaOperands, d_codes, emulate_wgmma, expected_d, wgmma_operands
from ..tensor.canonical import kmajor_smem_tensor, mnmajor_smem_tensor
from ..tensor.region import dynamic
from ..tensor.smem import SmemTensor
from ..tensor.stages import make_stages

__all__ = ["WgmmaRoundTrip", "WgmmaCase", "WGMMA_CASES", "compile_cases", "case_record"]

_CTYPE = {"f32": ("float", "__uint_as_float({})", "__float_as_uint({})"), "f16": ("unsigned", "{}", "{}"),
          "i32": ("int", "int({})", "unsigned({})")}
_STAGES = 2


@attrs.frozen
class WgmmaRoundTrip:
    """One tile of ``plan`` on a GPU, D read back: ``accumulate`` the scale-d the kernel passes, ``values`` the
    run-time indices' values (``(("stage", 1),)``)."""

    plan: WgmmaPlan
    accumulate: bool = False
    values: tuple[tuple[str, int], ...] = ()

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.plan, WgmmaPlan):
            raise CompileError("WgmmaRoundTrip: a WgmmaPlan (make_mma with wgmma_accumulator)")
        if sorted(n for n, _ in self.values) != list(self.plan.stage_names):
            raise CompileError(f"WgmmaRoundTrip: give a value for each run-time index {list(self.plan.stage_names)}")

    @property
    def threads(self) -> int:
        return WARPGROUP_THREADS * self.plan.warpgroups

    def operands(self, seed: int = 0) -> WgmmaOperands:
        return wgmma_operands(self.plan, seed, **dict(self.values))

    def input(self, seed: int = 0) -> np.ndarray:
        """The kernel's input bytes: shared memory's image, then the A registers (A in registers) and the starting D
        registers, thread by thread."""
        ops = self.operands(seed)
        words = [ops.a_registers] if ops.a_registers is not None else []
        words.append(ops.d0_registers)
        return np.concatenate([ops.image] + [w.astype(np.uint32).reshape(-1).view(np.uint8) for w in words])

    def source(self, entry: str = "wgmma_roundtrip", fn: str = "tile_mma") -> str:
        p, ops = self.plan, self.operands()
        ctype, load, store = _CTYPE[p.d.dtype.name]
        smem, a_words = ops.image.size, p.a_register_count
        a_decl = (f"  unsigned a[{a_words}];\n  for (unsigned r = 0; r < {a_words}u; ++r) a[r] = words[tid * "
                  f"{a_words}u + r];\n") if p.a_in_registers else ""
        a_arg = "a" if p.a_in_registers else f"base + {ops.smem_a}u"
        extra = (", pycute_warpgroup_index()" if p.warpgroups > 1 else "") + \
            "".join(f", {v}u" for _, v in sorted(self.values))
        regs = p.d_registers
        return p.cuda(fn) + f"""
extern "C" __global__ void __launch_bounds__({self.threads}, 1) {entry}(const unsigned char* input, unsigned* out) {{
  extern __shared__ __align__(1024) unsigned char raw[];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned tid = threadIdx.x;
  for (unsigned i = tid; i < {smem}u; i += blockDim.x) buf[i] = input[i];
  const unsigned* words = reinterpret_cast<const unsigned*>(input + {smem}u);
{a_decl}  {ctype} d[{regs}];
  for (unsigned r = 0; r < {regs}u; ++r) d[r] = {load.format(f"words[{self.threads * a_words}u + tid * {regs}u + r]")};
  pycute_fence_proxy_async_shared();     // the generic stores, before wgmma (the async proxy) reads them
  __syncthreads();
  pycute_wgmma_fence_operand(d);
  pycute_wgmma_fence();
  {fn}({a_arg}, base + {ops.smem_b}u, d, {int(self.accumulate)}u{extra});
  pycute_wgmma_commit_group();
  pycute_wgmma_wait_group<0>();
  pycute_wgmma_fence_operand(d);
  for (unsigned r = 0; r < {regs}u; ++r) out[tid * {regs}u + r] = {store.format("d[r]")};
}}
"""

    @property
    def smem_bytes(self) -> int:
        return int(self.operands().image.size)

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def emulate(self, seed: int = 0) -> np.ndarray:
        """(threads, D registers) uint32: what the emulator says each thread writes back."""
        return emulate_wgmma(self.plan, self.operands(seed), self.accumulate, None, **dict(self.values))

    def reference(self, seed: int = 0) -> np.ndarray:
        """(M, N) D codes of the reference MMA of the elements (plus the starting D when accumulating)."""
        return expected_d(self.plan, self.operands(seed), self.accumulate)

    def d_codes(self, registers: np.ndarray) -> np.ndarray:
        """(M, N) D codes from every thread's D registers, through the accumulator fragment."""
        return d_codes(self.plan, registers)

    def run(self, gpu: Gpu, seed: int = 0, arch: str = "sm_90a") -> tuple[np.ndarray, np.ndarray]:
        """``(got, want)``: every thread's D registers as the GPU writes them back and as the emulator says."""
        gpu = check_gpu(gpu)
        words = self.threads * self.plan.d_registers
        out = gpu.run(self.compile(arch).cubin, "wgmma_roundtrip", grid=1, block=self.threads,
                      dynamic_smem=self.smem_bytes + 1024, inputs=self.input(seed), out_words=words)
        return out.reshape(self.threads, self.plan.d_registers), self.emulate(seed)


def _tile(dtype: str, rows: int, k: int, swizzle: str, major: Major, staged: bool) -> SmemTensor:
    """A canonical tile (``staged``: stage ``dynamic("stage")`` of a ring of 2)."""
    maker = kmajor_smem_tensor if major == "K" else mnmajor_smem_tensor
    tile = maker(dtype, rows, k, swizzle)        # type: ignore[arg-type]
    if not staged:
        return tile
    ring = make_stages(tile, _STAGES)
    assert isinstance(ring, SmemTensor)
    return ring[:, :, dynamic("stage")]


@attrs.frozen
class WgmmaCase:
    """One round trip of the matrix: A / B / D types, N, K, the swizzle of both tiles, their majors, M (64 per
    warpgroup), A from ``a_source``, scale-d ``accumulate`` and ``staged`` (both tiles in a ring of 2 stages,
    indexed at run time, the round trip at stage 1)."""

    a: str
    b: str
    d: str
    n: int
    k: int
    swizzle: str = "128B"
    a_major: Major = "K"
    b_major: Major = "K"
    m: int = 64
    a_source: Literal["smem", "registers"] = "smem"
    accumulate: bool = False
    staged: bool = False

    @property
    def name(self) -> str:
        majors = f" {self.a_major}/{self.b_major}" if (self.a_major, self.b_major) != ("K", "K") else ""
        flags = [f for f, on in (("A regs", self.a_source == "registers"), ("acc", self.accumulate),
                                 ("staged", self.staged)) if on]
        return (f"{self.a}x{self.b}->{self.d} m{self.m}n{self.n}k{self.k} {self.swizzle}{majors}"
                + (f" [{', '.join(flags)}]" if flags else ""))

    def plan(self) -> WgmmaPlan:
        b = _tile(self.b, self.n, self.k, self.swizzle, self.b_major, self.staged)
        a = wgmma_a_fragment(self.a, self.m, self.k) if self.a_source == "registers" else \
            _tile(self.a, self.m, self.k, self.swizzle, self.a_major, self.staged)
        return make_wgmma(wgmma_accumulator(as_dtype(self.d), self.m, self.n), a, b)

    def roundtrip(self) -> WgmmaRoundTrip:
        return WgmmaRoundTrip(self.plan(), self.accumulate, (("stage", 1),) if self.staged else ())

    @property
    def sass(self) -> str:
        """The SASS opcode prefix its instructions assemble to: ``HGMMA.64x256x16``."""
        return f"{WGMMA_SASS[WGMMA_TYPES[self.a].family]}.64x{self.n}x{WGMMA_TYPES[self.a].k}"


def _cases() -> tuple[WgmmaCase, ...]:
    c = WgmmaCase
    return (
        # the GEMMs' shapes: bf16 and e4m3, N 256, 128B swizzle, K-major
        c("bf16", "bf16", "f32", 256, 64), c("f8e4m3", "f8e4m3", "f32", 256, 128),
        # every swizzle, N from 8 to 256 and odd legal N
        c("bf16", "bf16", "f32", 8, 32, "none"), c("bf16", "bf16", "f32", 64, 32, "32B"),
        c("bf16", "bf16", "f32", 128, 64, "64B", accumulate=True), c("bf16", "bf16", "f32", 136, 32, "64B"),
        c("bf16", "bf16", "f32", 72, 32, "none", accumulate=True),
        c("f16", "f16", "f32", 128, 64), c("f16", "f16", "f16", 64, 64), c("f16", "f16", "f16", 256, 32, "64B",
                                                                           accumulate=True),
        c("f16", "f16", "f32", 248, 64, "32B"), c("f16", "f16", "f16", 16, 32, "none"),
        # MN-major (f16 / bf16): A, B, both, every swizzle
        c("bf16", "bf16", "f32", 128, 64, "128B", "MN", "K"), c("bf16", "bf16", "f32", 128, 64, "64B", "K", "MN"),
        c("f16", "f16", "f32", 64, 32, "none", "MN", "MN"), c("f16", "f16", "f16", 64, 32, "32B", "MN", "MN"),
        c("bf16", "bf16", "f32", 256, 32, "128B", "MN", "MN", accumulate=True),
        # tf32 (K 8)
        c("tf32", "tf32", "f32", 64, 32), c("tf32", "tf32", "f32", 24, 16, "32B"),
        c("tf32", "tf32", "f32", 128, 16, "none", accumulate=True),
        # fp8 (K 32): f32 and f16 accumulators, e4m3 x e5m2
        c("f8e4m3", "f8e4m3", "f16", 128, 64, "64B"), c("f8e5m2", "f8e5m2", "f32", 40, 64, "none"),
        c("f8e4m3", "f8e5m2", "f32", 128, 128), c("f8e5m2", "f8e4m3", "f16", 200, 32, "32B", accumulate=True),
        # A in registers
        c("bf16", "bf16", "f32", 128, 64, a_source="registers"), c("f16", "f16", "f16", 64, 32, "64B",
                                                                   a_source="registers"),
        c("tf32", "tf32", "f32", 64, 32, a_source="registers"), c("f8e4m3", "f8e4m3", "f32", 128, 128,
                                                                   a_source="registers", accumulate=True),
        c("bf16", "bf16", "f32", 64, 32, "128B", "K", "MN", a_source="registers"),
        # two warpgroups (M 128), a run-time stage
        c("bf16", "bf16", "f32", 128, 64, m=128), c("f8e4m3", "f8e4m3", "f32", 64, 64, "64B", m=128,
                                                    a_source="registers"),
        c("bf16", "bf16", "f32", 256, 64, staged=True, accumulate=True),
        c("f8e4m3", "f8e4m3", "f32", 128, 128, m=128, staged=True),
        # integers (s32): s8 x s8, u8 x s8, N 48 and 224
        c("i8", "i8", "i32", 48, 64, "64B"), c("u8", "i8", "i32", 224, 32, "32B", accumulate=True),
    )


#: The round-trip matrix: bf16 / f16 / tf32 / e4m3 / e5m2 / s8 / u8 operands, f32 / f16 / s32 accumulators, N 8 to
#: 256 with odd legal N, every swizzle, K- and MN-major 16-bit operands, A in registers, two warpgroups, a run-time
#: stage, overwriting and accumulating.
WGMMA_CASES: tuple[WgmmaCase, ...] = _cases()


def compile_cases(cases: tuple[WgmmaCase, ...] = WGMMA_CASES, arch: str = "sm_90a") -> dict[str, list[str]]:
    """Every case's round-trip kernel in one translation unit (one NVRTC call): each case's name -> its kernel's SASS
    instructions."""
    source = "".join(case.roundtrip().source(f"case{i}", f"mma{i}") for i, case in enumerate(cases))
    functions = function_instructions(compile_cuda(source, arch=arch).sass())
    return {case.name: functions[f"case{i}"] for i, case in enumerate(cases)}


def _diagnosis(rt: WgmmaRoundTrip, got: np.ndarray, seed: int) -> list[str]:
    """Which simple misreading, if any, the GPU's D matches (for a D that differs from the emulator's)."""
    plan, out = rt.plan, []
    ops = rt.operands(seed)
    if np.array_equal(got, ops.d0_registers):
        out.append("D unchanged (no MMA landed)")
    if np.array_equal(rt.d_codes(got), expected_d(plan, ops, not rt.accumulate)):
        out.append("scale-d read the other way")
    if plan.d.dtype.name == "f16":
        halves = got.astype(np.uint32).view(np.uint16).reshape(got.shape + (2,))
        swapped = np.ascontiguousarray(halves[..., ::-1]).view(np.uint32).reshape(got.shape)
        if np.array_equal(swapped, rt.emulate(seed)):
            out.append("f16 halves swapped in each register")
    return out


def case_record(case: WgmmaCase, gpu: Gpu, seed: int = 0) -> dict:
    """One case on ``gpu``: D's registers against the emulator's, D through the fragment against the reference MMA,
    the first differences (row, column, got, want) and, when they differ, which simple misreading D matches."""
    rt = case.roundtrip()
    got, want = rt.run(gpu, seed)
    got_d, ref = rt.d_codes(got), rt.reference(seed)
    bad = np.argwhere(got_d != ref)
    record = {"case": case.name, "sass": case.sass, "m": case.m, "n": case.n, "k": case.k,
              "differ_emulator": int((got != want).sum()), "differ_reference": int(len(bad)),
              "elements": int(ref.size), "nonzero": int(np.count_nonzero(ref)),
              "first": [[int(i), int(j), f"{int(got_d[i, j]):#x}", f"{int(ref[i, j]):#x}"] for i, j in bad[:4]]}
    if record["differ_emulator"] or record["differ_reference"]:
        record["diagnosis"] = _diagnosis(rt, got, seed)
    return record
