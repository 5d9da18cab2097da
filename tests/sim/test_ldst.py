"""tcgen05.ld/st through every layer: NVRTC sm_100a cubins for every shape x .num x pack (ptxas accepts each form
the planner plans), SASS with the planned LDTM / STTM count and variants (.16x32bx2 is two SASS ops), and the PTX
interpreter's per-warp (op, address, immHalfSplitoff, registers) stream equal to the plan."""
from collections import Counter

import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.arch.sm100.tcgen05_ldst import LDST_SHAPES
from pycute.codegen.probe import ldst_probe_source
from pycute.compile import compile_cuda
from pycute.compile.sass import disassemble, function_instructions
from pycute.interp.stream import ldst_stream


def tensor(shape, num, pack):
    """A tensor that one shape.x<num>[.pack] per warp moves (16-bit values alone in their cells when packed)."""
    form = LDST_SHAPES[shape]
    dtype, per = (pc.f16, 2) if pack else (pc.f32, 1)
    width = form.columns * num * (2 if pack else 1) * (2 if shape == "16x32bx2" else 1)
    if shape == "32x32b":
        return pc.make_tmem_tensor(dtype, Layout((128, width), (TLane, per * TCol)), columns=256)
    return pc.make_tmem_tensor(dtype, Layout(((16, 4), width), ((TLane, 32 * TLane), per * TCol)), columns=512)


CASES = {(op, shape): [(f"{op}_{shape.replace('x', '_')}_x{n}{'_p' if pack else ''}",
                        pc.make_tmem_copy(tensor(shape, n, pack), op=op, shape=shape, num=n, max_registers=128))
                       for n in LDST_SHAPES[shape].nums() for pack in (False, True)]
         for op in ("ld", "st") for shape in LDST_SHAPES}


@pytest.mark.parametrize("op,shape", list(CASES), ids=[f"{o}-{s}" for o, s in CASES])
def test_every_form_assembles_to_its_planned_sass_and_its_stream_is_the_plan(op, shape):
    plans = CASES[(op, shape)]
    source = "".join(ldst_probe_source(plan, name) for name, plan in plans)
    compiled = compile_cuda(source)
    functions = function_instructions(disassemble(compiled.cubin))
    for name, plan in plans:
        sass = Counter(i.split()[0] for i in functions[f"{name}_probe"] if i.startswith(("LDTM", "STTM")))
        want = Counter(op for inst in plan.per_warp for op in inst.atom.sass_ops)
        assert sass == want, name
        for warp in range(4):
            assert ldst_stream(compiled.ptx, name, 0x40, warp) == plan.stream(0x40, warp), (name, warp)


def test_a_split_plan_issues_each_warp_at_its_own_lane_base():
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 24))
    ptx = compile_cuda(ldst_probe_source(plan, "acc")).ptx
    streams = [ldst_stream(ptx, "acc", 0x100, w) for w in range(4)]
    assert [[taddr for _, taddr, _, _ in s] for s in streams] == \
        [[(32 * w << 16) + 0x100, (32 * w << 16) + 0x110] for w in range(4)]
