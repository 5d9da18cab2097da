"""Hopper's wgmma facts (pycute/arch/sm90/wgmma.py, gmma_descriptor.py) against their sources: the register
fragments are CuTe's (mma_traits_sm90_gmma.hpp: CLayout_64xN, ALayout_64x8/16/32) and the PTX ISA's D formula; the
descriptor's fields sit where PTX #asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor puts
them; the types, accumulators and N the planner accepts are the ones ptxas assembles."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout
from pycute.arch.sm90.gmma_descriptor import GmmaSmemDescriptor
from pycute.arch.sm90.wgmma import WGMMA_TYPES, n_values, warpgroup_fragment, wgmma_ptx
from pycute.compile.nvrtc import compile_cuda
from pycute.errors import CompileError, DescriptorError
from pycute.tensor.values import layout_values

# CuTe's layouts, as cute/atom/mma_traits_sm90_gmma.hpp spells them (coordinate index row + 64 * col).
CUTE = {
    "D 64x256": (warpgroup_fragment(64, 256, 2), Layout(((4, 8, 4), (2, 2, 32)), ((128, 1, 16), (64, 8, 512)))),
    "D 64x8": (warpgroup_fragment(64, 8, 2), Layout(((4, 8, 4), (2, 2)), ((128, 1, 16), (64, 8)))),
    "A 64x16 (16-bit)": (warpgroup_fragment(64, 16, 2), Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))),
    "A 64x8 (tf32)": (warpgroup_fragment(64, 8, 1), Layout(((4, 8, 4), (2, 2)), ((64, 1, 16), (8, 256)))),
    "A 64x32 (8-bit)": (warpgroup_fragment(64, 32, 4), Layout(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024)))),
}


@pytest.mark.parametrize("name", CUTE)
def test_the_fragments_are_cutes(name):
    ours, cute = CUTE[name]
    assert ours == cute


@pytest.mark.parametrize("m, n", [(64, 8), (64, 136), (128, 256), (192, 24)])
def test_the_accumulator_holds_the_element_the_ptx_formula_names(m, n):
    """Thread t of warp w (of warpgroup g) holds, as value i, row 64 g + 16 w + t/4 + 8 ((i/2) % 2), column
    8 (i/4) + 2 (t%4) + i%2 (PTX "WGMMA .m64nNk16 register fragment layout for accumulator matrix D")."""
    d = pc.wgmma_accumulator(pc.f32, m, n)
    table = layout_values(d.layout).reshape(n // 2, 2 * m).T
    t, i = np.meshgrid(np.arange(2 * m), np.arange(n // 2), indexing="ij")
    g, w, lane = t // 128, (t % 128) // 32, t % 32
    row = 64 * g + 16 * w + lane // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
    assert np.array_equal(table, row + m * col)


@pytest.mark.parametrize("dtype, k", [(pc.bf16, 64), (pc.tf32, 16), ("f8e4m3", 96), (pc.f16, 16)])
def test_every_fragment_holds_each_element_once(dtype, k):
    for frag, size in ((pc.wgmma_a_fragment(dtype, 128, k), 128 * k), (pc.wgmma_accumulator(pc.f32, 128, 40),
                                                                         128 * 40)):
        assert sorted(layout_values(frag.layout)) == list(range(size))


def test_the_descriptor_fields_sit_where_the_ptx_table_puts_them():
    """start >> 4 at bits 0-13, LBO >> 4 at 16-29, SBO >> 4 at 32-45, base offset at 49-51, layout type at 62-63
    (0 none, 1 128B, 2 64B, 3 32B)."""
    value = GmmaSmemDescriptor(0x1230, 0x40, 0x400, "128B", 3).encode()
    assert value == (0x123 | 0x4 << 16 | 0x40 << 32 | 3 << 49 | 1 << 62)
    assert [GmmaSmemDescriptor(layout=x).encode() >> 62 for x in ("none", "128B", "64B", "32B")] == [0, 1, 2, 3]


@settings(max_examples=50, deadline=None)
@given(st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1),
       st.sampled_from(["none", "32B", "64B", "128B"]), st.integers(0, 7))
def test_decode_inverts_encode(start, lbo, sbo, layout, base):
    d = GmmaSmemDescriptor(16 * start, 16 * lbo, 16 * sbo, layout, base)
    assert GmmaSmemDescriptor.decode(d.encode()) == d


@pytest.mark.parametrize("bit", [14, 30, 47, 52, 61])
def test_a_bit_outside_the_fields_is_refused(bit):
    with pytest.raises(DescriptorError, match="belong to no field and must be 0"):
        GmmaSmemDescriptor.decode(1 << bit)


def test_the_n_of_each_family_follows_the_ptx_shape_lists():
    assert n_values("bf16") == tuple(range(8, 257, 8))
    assert n_values("int") == (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224)


def _kernel(n: int, k: int, d: str, a: str, b: str) -> str:
    """One wgmma of these types (A and B through descriptors, no transpose operands unless the form has them)."""
    regs = n // 2 if d != "f16" else n // 4
    letter = "f" if d == "f32" else "r"
    ctype = "float" if d == "f32" else "unsigned"
    ops = ", ".join(f"%{i}" for i in range(regs))
    imm = "" if a in ("i8", "u8") else ", 1, 1" + (", 0, 0" if WGMMA_TYPES[a].transpose else "")
    outputs = ", ".join(f'"+{letter}"(d[{i}])' for i in range(regs))
    return (f'extern "C" __global__ void k({ctype}* out, unsigned long long x, unsigned long long y) {{\n'
            f"  {ctype} d[{regs}];\n  for (int i = 0; i < {regs}; ++i) d[i] = out[i];\n"
            f'  asm volatile("{wgmma_ptx(n, k, d, a, b)} {{{ops}}}, %{regs}, %{regs + 1}, 1{imm};"\n'
            f'    : {outputs} : "l"(x), "l"(y));\n'
            f"  for (int i = 0; i < {regs}; ++i) out[i] = d[i];\n}}\n")


@pytest.mark.parametrize("n, k, d, a, b, legal", [
    (64, 16, "f32", "bf16", "bf16", True), (64, 16, "f16", "bf16", "bf16", False),
    (64, 16, "f16", "f16", "f16", True), (64, 8, "f16", "tf32", "tf32", False),
    (64, 32, "f16", "f8e4m3", "f8e5m2", True), (64, 16, "f32", "bf16", "f16", False),
    (40, 32, "i32", "i8", "u8", False), (48, 32, "i32", "u8", "i8", True)],
    ids=["bf16-f32", "bf16-f16", "f16-f16", "tf32-f16", "e4m3xe5m2-f16", "bf16xf16", "s8-N40", "u8xs8-N48"])
def test_the_type_table_is_what_ptxas_assembles(n, k, d, a, b, legal):
    table = d in WGMMA_TYPES[a].accumulators and WGMMA_TYPES[a].family == WGMMA_TYPES[b].family \
        and n in n_values(WGMMA_TYPES[a].family)
    assert table == legal
    if legal:
        compile_cuda(_kernel(n, k, d, a, b), arch="sm_90a")
    else:
        with pytest.raises(CompileError):
            compile_cuda(_kernel(n, k, d, a, b), arch="sm_90a", cache=False)
