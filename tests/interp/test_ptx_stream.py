"""PTX-level verification: interpret the compiled issue code and compare its stream with the plan, bit-exactly
through the emulator, for the whole round-trip matrix; and check that only the elected lane issues."""
import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.interp.stream import probe_stream, run_entry
from pycute.codegen.probe import probe_source
from tests.copy.tcgen05_cp.test_roundtrip import CASES, build

SHARED_BASE = 0x0100_0400      # a shared-window address with CTA-rank bits above bit 23, as sm_100 SASS forms them


def batches():
    """One NVRTC program per atom: its 24 plans as separate probe kernels."""
    groups = {}
    for atom, swizzle, dtype, middle in CASES:
        src, dst = build(atom, swizzle, dtype, middle)
        plan = pc.make_tiled_copy(dst, src, cta_group=atom.cta_group, shape=atom.shape,
                                  multicast=atom.multicast or None)
        groups.setdefault(atom, []).append((f"c{len(groups.get(atom, []))}", plan))
    return groups


GROUPS = batches()


@pytest.mark.parametrize("atom", list(GROUPS), ids=lambda a: a.ptx)
def test_interpreted_stream_equals_the_plan_and_emulates_bit_exactly(atom):
    plans = GROUPS[atom]
    source = "".join(probe_source(plan, name) for name, plan in plans)
    ptx = compile_cuda(source).ptx
    for name, plan in plans:
        def stream(smem_base, tmem_base, name=name):
            return probe_stream(ptx, name, (SHARED_BASE & ~0x3FFFF) | smem_base, tmem_base)
        assert stream(0x400, 32) == plan.stream(0x400, 32)
        pc.verify_plan(plan, seed=2, smem_base=0x400, stream=stream)
        # The warp calls the function; every lane but the elected one issues nothing.
        assert [probe_stream(ptx, name, 0x400, 32, lane=lane) for lane in (1, 17, 31)] == [[], [], []]


def test_unsupported_instruction_is_an_error_not_skipped():
    ptx = ".visible .entry k(\n.param .u32 k_param_0\n)\n{\n\tld.param.b32 %r1, [k_param_0];\n" \
          "\ttex.1d.v4.s32.s32 {%r2, %r3, %r4, %r5}, [tex, {%r1}];\n\tret;\n\n}"
    with pytest.raises(pc.CompileError, match="outside the interpreted subset: 'tex.1d.v4.s32.s32"):
        run_entry(ptx, {0: 0}, {})


def test_float_arithmetic_inside_braces_is_interpreted_not_skipped():
    ptx = ".visible .entry k(\n.param .u32 k_param_0\n)\n{\n\tld.param.b32 %r1, [k_param_0];\n" \
          "\tmov.b32 %f2, 0f40000000;\n\t{ .reg .f32 t;\n\tfma.rn.f32 t, %f2, %f2, %f2;\n\tmov.b32 %r2, t;\n\t}\n" \
          "\ttcgen05.cp.cta_group::1.128x256b [%r2], %rd1;\n\tret;\n\n}"
    # 2 * 2 + 2 = 6.0 = 0x40C00000 reaches the taddr operand; an unset %rd1 is named
    with pytest.raises(pc.CompileError, match="reads register %rd1 before writing it"):
        run_entry(ptx, {0: 0}, {})


def test_branches_and_predicates_are_followed():
    ptx = """.visible .entry k(
.param .u32 k_param_0
)
{
\tld.param.b32 %r1, [k_param_0];
\tsetp.eq.s32 %p1, %r1, 0;
\t@%p1 bra $L__skip;
\tmov.b64 %rd1, 4611756662049538048;
\ttcgen05.cp.cta_group::1.128x256b [%r1], %rd1;
$L__skip:
\tret;

}"""
    assert run_entry(ptx, {0: 0}, {}) == []
    assert run_entry(ptx, {0: 8}, {}) == [("tcgen05.cp.cta_group::1.128x256b", 8, 4611756662049538048)]


def test_elect_sync_elects_the_lowest_lane_of_its_member_mask_and_refuses_lanes_outside_it():
    ptx = """.visible .entry k(
.param .u32 k_param_0
)
{
\tmov.b64 %rd1, 4611756662049538048;
\t{
\t.reg .pred p;
\telect.sync %r2|p, 0xFFFFFFF0;
\t@!p bra $L__skip;
\t}
\ttcgen05.cp.cta_group::1.128x256b [%r2], %rd1;
$L__skip:
\tret;

}"""
    assert run_entry(ptx, {}, {}, lane=4) == [("tcgen05.cp.cta_group::1.128x256b", 4, 4611756662049538048)]
    assert run_entry(ptx, {}, {}, lane=5) == []
    with pytest.raises(pc.CompileError, match="lane 0 is not in the member mask 0xfffffff0"):
        run_entry(ptx, {}, {}, lane=0)
