"""The single-thread interpreter refuses what it cannot mean: a thread whose lane and %tid.x disagree, a thread
outside the block, parameters and shared symbols the entry does not have. (The lane follows %tid.x when only the
thread is given: ``tid=37`` is lane 5.)"""
import pytest

import pycute as pc
from pycute.interp.stream import trace_entry

PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_param_0)
{
\t.reg .b32 %r<4>;
\t.shared .align 8 .b8 _ZZ1kE4full[16];
\tld.param.b32 %r1, [k_param_0];
\tmov.u32 %r2, %laneid;
\tmov.u32 %r3, _ZZ1kE4full;
\tret;
}
"""


def test_the_lane_follows_the_thread_index():
    thread = trace_entry(PTX, {0: 1}, {"full": 0x400}, tid=37)
    assert (thread.regs["%r2"], thread.regs["%r3"]) == (5, 0x400)


@pytest.mark.parametrize("kwargs,message", [
    ({"lane": 3, "tid": 37}, "lane 3 and tid 37 disagree: thread 37 is lane 5"),
    ({"tid": 200}, r"thread 200 is outside the block of 128 threads \(%ntid.x"),
])
def test_a_thread_the_block_does_not_have_is_refused(kwargs, message):
    with pytest.raises(pc.CompileError, match=message):
        trace_entry(PTX, {0: 1}, {}, **kwargs)


def test_parameters_and_symbols_the_entry_does_not_have_are_refused():
    with pytest.raises(pc.CompileError, match=r"entry 'k' has no parameter 1, 'tmem' \(it has 1: indices 0..0 or "
                                              r"names k_param_0\)"):
        trace_entry(PTX, {0: 1, 1: 2, "tmem": 3}, {})
    with pytest.raises(pc.CompileError, match=r"symbols slot are not shared variables of the PTX \(it declares full\)"):
        trace_entry(PTX, {0: 1}, {"slot": 0x100})


GRID_CONSTANT = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry g(.param .align 64 .b8 g_param_0[128])
{
\t.reg .b64 %rd<2>;
\tmov.b64 %rd1, g_param_0;
\tret;
}
"""


def test_a_by_value_parameter_whose_address_is_taken_has_the_given_value_as_its_address():
    # a __grid_constant__ tensor map handed on as &map: the kernel takes the parameter's address
    assert trace_entry(GRID_CONSTANT, {0: 0x7100_0000_0000}, {}).regs["%rd1"] == 0x7100_0000_0000
