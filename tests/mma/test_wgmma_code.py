"""A wgmma plan's generated function: in a K loop it compiles for sm_90a to exactly the planned HGMMA / QGMMA with
the accumulators in registers (no local memory, no stack, no serialisation warning); the PTX interpreter reads back
the plan's stream (shared or register A, MN-major, a run-time stage, each warpgroup of two) with the fence, commit
and wait in order; the comment's fragment formula is the fragment; ``pycute/wgmma.cuh``'s helpers assemble."""
import re

import pytest

import pycute as pc
from pycute.codegen.wgmma import fragment_formula
from pycute.compile.nvrtc import compile_cuda
from pycute.errors import CompileError
from pycute.interp.stream import trace_entry
from pycute.tensor.values import layout_values

LOOP = """
extern "C" __global__ void __launch_bounds__(128, 1) gemm(float* out, unsigned sa, unsigned sb, int steps) {
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.f;
  pycute_wgmma_fence_operand(d);
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    pycute_wgmma_fence();
    tile_mma(sa, sb, d, t > 0, t % 4);
    pycute_wgmma_commit_group();
    pycute_wgmma_wait_group<0>();
  }
  pycute_wgmma_fence_operand(d);
#pragma unroll
  for (int i = 0; i < 128; ++i) out[threadIdx.x * 128 + i] = d[i];
}
"""


def staged(dtype, rows, k):
    return pc.make_stages(pc.kmajor_smem_tensor(dtype, rows, k, "128B"), 4)[:, :, pc.dynamic("stage")]


@pytest.mark.parametrize("dtype, k, sass", [(pc.bf16, 64, "HGMMA.64x256x16.F32.BF16"),
                                            ("f8e4m3", 128, "QGMMA.64x256x32.F32.E4M3.E4M3")], ids=["bf16", "e4m3"])
def test_a_k_loop_of_m64n256_keeps_its_128_accumulators_in_registers(dtype, k, sass):
    plan = pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 256), staged(dtype, 64, k), staged(dtype, 256, k))
    code = compile_cuda(plan.cuda("tile_mma") + LOOP, arch="sm_90a", options=("--ptxas-options=-v",), cache=False)
    h = code.histogram()
    assert h[sass] == len(plan.instructions) == 4 and sum(v for o, v in h.items() if "GMMA" in o) == 4
    assert not [o for o in h if o.startswith(("LDL", "STL"))]
    assert re.search(r"\b0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", code.log), code.log
    assert "serialized" not in code.log


PROBE = """
extern "C" __global__ void probe({ctype}* out, const unsigned* regs, unsigned sa, unsigned sb, unsigned scale,
                                 unsigned stage) {{
  {decl}
  {ctype} d[{n}];
  for (int i = 0; i < {n}; ++i) d[i] = out[i];
  pycute_wgmma_fence();
  mma({a}, sb, d, scale{group}{stage});
  pycute_wgmma_commit_group();
  pycute_wgmma_wait_group<1>();
  pycute_wgmma_fence_operand(d);
  for (int i = 0; i < {n}; ++i) out[threadIdx.x * {n} + i] = d[i];
}}
"""


def probe(plan) -> str:
    regs = plan.a_register_count
    decl = f"unsigned a[{regs}];\n  for (int i = 0; i < {regs}; ++i) a[i] = regs[i];" if regs else ""
    ctype = {"f32": "float", "f16": "unsigned", "i32": "int"}[plan.d.dtype.name]
    return plan.cuda("mma") + PROBE.format(decl=decl, n=plan.d_registers, ctype=ctype, a="a" if regs else "sa",
                                           group=", pycute_warpgroup_index()" if plan.warpgroups > 1 else "",
                                           stage=", stage" if plan.stage_names else "")


PLANS = {
    "MN-major A, staged B, two warpgroups": pc.make_mma(pc.wgmma_accumulator(pc.f32, 128, 64),
                                                         pc.mnmajor_smem_tensor(pc.bf16, 128, 32, "128B"),
                                                         staged(pc.bf16, 64, 64)[:, 0:32]),
    "A in registers, e4m3 x e5m2, f16 D": pc.make_mma(pc.wgmma_accumulator(pc.f16, 64, 40),
                                                      pc.wgmma_a_fragment("f8e4m3", 64, 64),
                                                      pc.kmajor_smem_tensor("f8e5m2", 40, 64, "64B")),
    "s8 x u8": pc.make_mma(pc.wgmma_accumulator(pc.i32, 64, 48), pc.kmajor_smem_tensor("i8", 64, 64, "64B"),
                           pc.kmajor_smem_tensor("u8", 48, 64, "64B")),
}


@pytest.mark.parametrize("name", PLANS)
def test_the_generated_function_issues_the_plans_stream_between_fence_and_commit(name):
    plan = PLANS[name]
    ptx = compile_cuda(probe(plan), arch="sm_90a").ptx
    stage = {"stage": 2} if plan.stage_names else {}
    for tid in range(0, 128 * plan.warpgroups, 128):
        thread = trace_entry(ptx, {0: 0x7000_0000_0000, 1: 0x7100_0000_0000, 2: 0x400, 3: 0x10400, 4: 1, 5: 2},
                             {}, "probe", tid=tid, specials={"%ntid.x": 128 * plan.warpgroups})
        smem_a = None if plan.a_in_registers else 0x400
        assert thread.mma == plan.stream(smem_a, 0x10400, True, tid // 128, **stage)
        order = [t if isinstance(t, tuple) else ("wgmma.mma_async",) for t in thread.trace]
        ops = [t[0].split(".sync")[0] for t in order if not t[0].startswith(("ld", "st"))]
        assert ops == ["wgmma.fence"] + ["wgmma.mma_async"] * len(plan.instructions) + \
            ["wgmma.commit_group", "wgmma.wait_group"]
        assert len({i.d_registers for i in thread.mma}) == 1 and len(thread.mma[0].d_registers) == plan.d_registers


def test_each_k_step_of_an_a_in_registers_reads_its_four_registers():
    plan = PLANS["A in registers, e4m3 x e5m2, f16 D"]
    thread = trace_entry(compile_cuda(probe(plan), arch="sm_90a").ptx,
                         {0: 0x7000_0000_0000, 1: 0x7100_0000_0000, 2: 0, 3: 0x400, 4: 0, 5: 0}, {}, "probe")
    loads = {args[0]: int(re.search(r"\+(\d+)\]", args[1]).group(1)) // 4 if "+" in args[1] else 0
             for op, args in (t for t in thread.trace if isinstance(t, tuple)) if op.startswith("ld.global.u32")}
    assert [[loads[r] for r in i.a_registers] for i in thread.mma] == [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.mark.parametrize("run, rows, cols", [(2, 128, 24), (1, 64, 16), (4, 64, 64)], ids=["D", "tf32 A", "8-bit A"])
def test_the_comments_fragment_formula_is_the_fragment(run, rows, cols):
    from pycute.arch.sm90.wgmma import warpgroup_fragment
    layout = warpgroup_fragment(rows, cols, run)
    threads = 2 * rows
    table = layout_values(layout).reshape(-1, threads).T
    row, col = (re.sub(r"/", "//", f) for f in fragment_formula(run))
    for t in range(threads):
        for i in range(table.shape[1]):
            env = {"g": t // 128, "t": t % 128, "i": i}
            assert eval(row, env) + rows * eval(col, env) == table[t, i]      # noqa: S307  (our own formula)


HEADER = """#include "pycute/wgmma.cuh"
extern "C" __global__ void __launch_bounds__(384, 1) k(unsigned* out) {
  if (pycute_warpgroup_index() == 0) pycute_setmaxnreg_dec<40>(); else pycute_setmaxnreg_inc<232>();
  pycute_wgmma_fence();
  pycute_wgmma_commit_group();
  pycute_wgmma_wait_group<0>();
  out[threadIdx.x] = pycute_warpgroup_thread() + (unsigned)pycute_gmma_desc_at(1ull << 62, 0x400u);
}
"""


def test_the_header_helpers_assemble_for_sm_90a():
    h = compile_cuda(HEADER, arch="sm_90a").histogram()
    assert h["USETMAXREG.DEALLOC.CTAPOOL"] == 1 and h["USETMAXREG.TRY_ALLOC.CTAPOOL"] == 1
    assert "WARPGROUP.ARRIVE" in h and any(o.startswith("WARPGROUP.DEPBAR") for o in h)


def test_a_register_count_setmaxnreg_does_not_take_is_a_compile_error():
    with pytest.raises(CompileError, match="setmaxnreg: 24..256, a multiple of 8"):
        compile_cuda(HEADER.replace("<40>", "<44>"), arch="sm_90a", cache=False)


def test_asked_to_wait_the_function_fences_issues_commits_and_waits_itself():
    plan = PLANS["s8 x u8"]
    source = plan.cuda("mma", wait=1) + ('extern "C" __global__ void probe(int* out, unsigned sa, unsigned sb) {\n'
                                         '  int d[24];\n  for (int i = 0; i < 24; ++i) d[i] = out[i];\n'
                                         '  mma(sa, sb, d, 0u);\n  for (int i = 0; i < 24; ++i) out[i] = d[i];\n}\n')
    thread = trace_entry(compile_cuda(source, arch="sm_90a").ptx, {0: 0x7000_0000_0000, 1: 0x400, 2: 0x8400}, {},
                         "probe")
    ops = [t[0] if isinstance(t, tuple) else "wgmma.mma_async" for t in thread.trace]
    ops = [op for op in ops if not op.startswith(("ld", "st"))]
    assert ops == ["wgmma.fence.sync.aligned", "wgmma.mma_async", "wgmma.mma_async",
                   "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned"]
    assert thread.mma == plan.stream(0x400, 0x8400, False)
    with pytest.raises(TypeError, match="wait is None"):
        plan.cuda("mma", wait=-1)


def test_asked_to_commit_the_function_fences_issues_and_commits_one_group_and_leaves_the_wait_to_the_caller():
    # several groups in flight (an attention kernel's S = Q K^T and O += P V): the caller waits for the older one
    plan = PLANS["s8 x u8"]
    source = plan.cuda("mma", commit=True) + ('extern "C" __global__ void probe(int* out, unsigned sa, unsigned sb) {\n'
                                              '  int d[24];\n  for (int i = 0; i < 24; ++i) d[i] = out[i];\n'
                                              '  mma(sa, sb, d, 0u);\n  pycute_wgmma_wait_group<0>();\n'
                                              '  pycute_wgmma_fence_operand(d);\n'
                                              '  for (int i = 0; i < 24; ++i) out[i] = d[i];\n}\n')
    thread = trace_entry(compile_cuda(source, arch="sm_90a").ptx, {0: 0x7000_0000_0000, 1: 0x400, 2: 0x8400}, {},
                         "probe")
    ops = [t[0] if isinstance(t, tuple) else "wgmma.mma_async" for t in thread.trace]
    ops = [op for op in ops if not op.startswith(("ld", "st"))]
    assert ops == ["wgmma.fence.sync.aligned", "wgmma.mma_async", "wgmma.mma_async",
                   "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned"]
    assert "  pycute_wgmma_wait_group" not in plan.cuda("mma", commit=True)       # (the comment names it)
    with pytest.raises(TypeError, match="commit is a bool"):
        plan.cuda("mma", commit=1)


@pytest.mark.parametrize("dtype, n", [(pc.bf16, 256), (pc.f8e4m3, 64), (pc.tf32, 8)])
def test_the_asm_operand_lists_are_comma_separated_as_gnu_asm_requires(dtype, n):
    # NVRTC's front end tolerated a missing comma between operand lines; GCC-style asm does not, nor does nvcc's host
    # pass when a user includes the function in a .cu file: every operand but the last ends in a comma.
    k = 64 if dtype.bits == 16 else 32 if dtype.bits == 32 else 128
    plan = pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, n), pc.kmajor_smem_tensor(dtype, 64, k, "128B"),
                       pc.kmajor_smem_tensor(dtype, n, k, "128B"))
    for block in plan.cuda("tile_mma").split("asm volatile(")[1:]:
        operand_lines = [line.strip() for line in block.splitlines() if re.match(r'\s*(: )?"\+[frh]"\(d\[\d+\]\)', line)]
        assert operand_lines and all(line.endswith(",") for line in operand_lines[:-1])
        assert not operand_lines[-1].endswith(",")
