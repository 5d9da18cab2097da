"""Reading PTX: braces blocks are scopes (their registers and labels renamed, never skipped), vectors and
initialisers keep their braces, register arrays, parameters and directives are read, line information gives each
instruction its chain of inlined functions, and anything outside the subset is refused before a thread runs."""
import numpy as np
import pytest

import pycute as pc
from pycute.interp import run_kernel
from pycute.interp.front import parse_module

from tests.interp.ptxkit import HEADER, entry

MODULE = HEADER + """.global .align 4 .u32 table[3] = {1, 2, 3};
.visible .entry k(.param .u64 k_param_0, .param .align 64 .b8 k_param_1[128])
.maxntid 64, 1, 1
.reqnctapercluster 2, 1, 1
{
\t.reg .b32 %r<3>;
\t{
\t.reg .pred p;
\tsetp.eq.u32 p, %r1, 0;
\t@p bra L;
L:
\t}
\t{
\t.reg .pred p;
\tmov.b32 %r2, {%r1};
L:
\t}
\tret;
}
"""


def test_an_entrys_parameters_directives_scopes_and_variables_are_read():
    module = parse_module(MODULE)
    e = module.entries["k"]
    assert [(p.name, p.size, p.align) for p in e.params] == [("k_param_0", 8, 8), ("k_param_1", 128, 64)]
    assert e.directives == {"maxntid": (64, 1, 1), "reqnctapercluster": (2, 1, 1)}
    assert [i.text for i in e.instrs][:3] == ["setp.eq.u32 p, %r1, 0", "@p bra L", "mov.b32 %r2, {%r1}"]
    assert e.instrs[0].args[0] == e.instrs[1].guard == "p~1" and e.instrs[1].args[0] == "L~1"
    assert e.labels == {"L~1": 2, "L~2": 3}
    assert module.variables[0].init == bytes([1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0])


@pytest.mark.parametrize("body,message", [
    ("\ttex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [tex, {%r1}];", r"PTX line \d+: instruction outside the interpreted "
                                                                r"subset: 'tex.1d.v4.s32.s32"),
    ("\tcall.uni f, (%r1);", "a call's operand '%r1' is not one of its .param variables"),
    ("\tadd.f32 %f1, %f2, 1.5;", "decimal float immediate"),
    ("\tmov.u32 %r1, %envreg3;", "%envreg3 is neither a declared register nor a special register the interpreter models"),
])
def test_an_instruction_outside_the_subset_is_refused_before_any_thread_runs(body, message):
    with pytest.raises(pc.CompileError, match=message):
        run_kernel(entry(body), block=1, args=[np.zeros(1, dtype=np.uint32)])


def test_a_directive_outside_the_subset_is_refused():
    with pytest.raises(pc.CompileError, match=r"directive .maxwhat is outside the interpreted subset"):
        parse_module(MODULE.replace(".maxntid", ".maxwhat"))


def test_a_decoded_family_without_a_kernel_executor_is_refused_by_name(monkeypatch):
    from pycute.interp.stream import ISSUE_DECODERS
    monkeypatch.setitem(ISSUE_DECODERS, "frob.sync", lambda op, args, value: (op, value(args[1])))
    with pytest.raises(pc.CompileError, match=r"frob.sync is decoded \(pycute.interp.stream.ISSUE_DECODERS\) but the "
                                              r"whole-kernel run has no executor for it"):
        run_kernel(entry("\tfrob.sync.b32 {%r1}, %r2;"), block=1, args=[np.zeros(1, dtype=np.uint32)])


def test_a_warp_collective_family_runs_through_its_kernel_executor(monkeypatch):
    """The protocol a new family follows: a decoder row, and a kernel executor that gets the whole warp."""
    from pycute.interp.rtemit_sync import KERNEL_EXECUTORS
    from pycute.interp.stream import ISSUE_DECODERS

    def everyone_sums(cta, warp, site, group):            # each lane gets the sum of every lane's operand
        total = sum(record[1] for _, _, (record, _), _ in group.values())
        for th, s, _, _ in group.values():
            th.R[s.dests[0]] = total
    monkeypatch.setitem(ISSUE_DECODERS, "frob.sync", lambda op, args, value: (op, value(args[1])))
    monkeypatch.setitem(KERNEL_EXECUTORS, "frob.sync", (everyone_sums, True))
    body = ("\tmov.u32 %r2, %laneid;\n\tfrob.sync.b32 {%r1}, %r2;\n\tmov.u32 %r3, %tid.x;\n"
            "\tmul.wide.u32 %rd1, %r3, 4;\n\tadd.s64 %rd2, %out, %rd1;\n\tst.global.u32 [%rd2], %r1;")
    out = np.zeros(32, dtype=np.uint32)
    run_kernel(entry(body), block=32, args=[out])
    assert set(out) == {sum(range(32))}
