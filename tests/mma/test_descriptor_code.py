"""The MMA's descriptors as generated code, and a staged operand: make_umma_desc of a tile with a run-time stage
index describes every stage (each value's descriptor is the static tile's), and the generated function computes,
in the compiled code, exactly what ``encode`` says; an instruction descriptor is a generated constant."""
import pytest

import pycute as pc
from pycute import ComposedLayout, Layout
from pycute.compile.nvrtc import compile_cuda
from pycute.interp.stream import trace_entry

ATOM = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")


def staged(stages: int, step: int):
    layout = Layout(ATOM.layout.shape + (stages,), ATOM.layout.stride + (step,))
    return pc.make_smem_tensor(pc.bf16, ComposedLayout(ATOM.swizzle, 0, layout))


@pytest.mark.parametrize("stage", [0, 1, 3])
@pytest.mark.parametrize("k", [0, 3])
def test_a_staged_operand_describes_every_stage(stage, k):
    buf = staged(4, 8192)
    d = pc.make_umma_desc(buf[:, :, pc.dynamic("stage")])
    assert d.stages[0].smem_step == 16384
    assert d.encode(0x8000, k, stage=stage) == pc.make_umma_desc(buf[:, :, stage]).encode(0x8000, k)


def test_a_stage_that_breaks_the_swizzle_pattern_is_refused():
    with pytest.raises(pc.DescriptorError, match="moves the tile by 8320 B"):
        pc.make_umma_desc(staged(2, 4160)[:, :, pc.dynamic("stage")])


def test_the_generated_descriptor_function_computes_what_encode_says():
    d = pc.make_umma_desc(staged(4, 8192)[:, :, pc.dynamic("stage")])
    source = d.cuda("desc_a") + ('extern "C" __global__ void probe(unsigned long long* out, unsigned smem, '
                                 'unsigned k, unsigned stage) { out[0] = desc_a(smem, k, stage); }')
    ptx = compile_cuda(source, arch="sm_100a").ptx
    for smem, k, stage in ((0x8000, 0, 0), (0x10000, 3, 2), (0x400, 1, 3)):
        thread = trace_entry(ptx, {0: 0x7000_0000_0000, 1: smem, 2: k, 3: stage}, {}, "probe")
        stores = [args for op, args in thread.trace if op.startswith("st.global")]
        assert thread.regs[stores[0][1]] == d.encode(smem, k, stage=stage)


def test_an_instruction_descriptor_is_a_generated_constant():
    i = pc.make_instr_desc("f16", pc.bf16, pc.bf16, pc.f32, 128, 256)
    assert f"constexpr unsigned idesc = {i.value:#010x}u;" in i.cuda("idesc")
