"""FP4 decompression into TMEM (tcgen05.cp ... .b8x16.b4x16_p64) through every layer: planned as plain byte copies
of the padded source's 16-byte units, emitted with the decompressing PTX, emulated bit-exactly against the layouts
(each 4-bit element becomes its TMEM byte's bits [5:2]), interpreted from the compiled PTX, and in SASS as
UTCCP...U4x16P64."""
import pytest

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle, TCol, TLane
from pycute.arch.sm100.tcgen05_cp import decompression_sass
from pycute.atoms import cp_candidates
from pycute.codegen.probe import probe_entry, probe_source
from pycute.compile import compile_cuda
from pycute.compile.sass import function_instructions, utccp_instructions
from pycute.interp.stream import probe_stream

PITCH = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
SW = {"none": None, "32B": 1, "64B": 2, "128B": 3}


def padded_fp4(rows: int, k: int, swizzle: str):
    """A K-major FP4 tile in the padded format: 16 elements per 16-byte unit, rows of one swizzle row."""
    pitch = PITCH[swizzle]
    units_per_row = pitch // 16
    if swizzle == "none":
        layout = Layout(((8, rows // 8), (16, k // 16)), ((32, 256), (1, 32 * rows)))
    else:
        per = units_per_row * 16                         # elements of one swizzle row
        layout = Layout(((8, rows // 8), ((16, units_per_row), k // per)),
                        ((2 * pitch, 16 * pitch), ((1, 32), 32 * units_per_row * rows)))
    if SW[swizzle] is None:
        return pc.make_smem_tensor(pc.f4e2m1, layout)
    return pc.make_smem_tensor(pc.f4e2m1, ComposedLayout(Swizzle(SW[swizzle], 5, 3), 0, layout))


def tmem_for(atom, k):
    return pc.make_tmem_tensor(pc.u8, pc.make_layout(atom.lane_pattern, Layout(k, TCol)), replica=atom.replica,
                               columns=32)


CASES = [(atom, sw) for g in (1, 2) for atom in cp_candidates(g) for sw in PITCH]


def fp4_plan(atom, swizzle):
    per_row = atom.bits // 8                               # TMEM bytes (= FP4 elements) of one row
    k = 2 * per_row
    src = padded_fp4(max(atom.rows, 8), max(k, PITCH[swizzle]), swizzle)[0:atom.rows, 0:k]
    return pc.make_tiled_copy(tmem_for(atom, k), src, cta_group=atom.cta_group, shape=atom.shape,
                              multicast=atom.multicast or None, decompress="b4x16_p64")


@pytest.fixture(scope="module")
def probes():
    """Every case's probe kernel (``fp4_<case>_probe``) in one translation unit: one NVRTC compile and one nvdisasm
    run for the 48 cases, not one each (each kernel's PTX entry and SASS function are its own)."""
    compiled = compile_cuda("".join(probe_source(fp4_plan(a, s), f"fp4_{i}") for i, (a, s) in enumerate(CASES)))
    return compiled.ptx, function_instructions(compiled.sass())


@pytest.mark.parametrize("atom,swizzle", CASES, ids=[f"{a.name}-g{a.cta_group}-{s}" for a, s in CASES])
def test_fp4_decompression_round_trips_in_the_emulator_and_through_the_compiled_stream(atom, swizzle, probes):
    plan = fp4_plan(atom, swizzle)
    assert plan.atom == atom and all(i.ptx.endswith(".b8x16.b4x16_p64") for i in plan.instructions)
    pc.verify_plan(plan, seed=3)
    ptx, functions = probes
    name = f"fp4_{CASES.index((atom, swizzle))}"
    assert probe_stream(ptx, name, 0x400, 0) == plan.stream(0x400, 0)
    pc.verify_plan(plan, seed=4, smem_base=0x400, stream=lambda s, t: probe_stream(ptx, name, s, t))
    sass = utccp_instructions(functions[probe_entry(name)])
    assert len(sass) == len(plan.instructions)
    assert all(i.split()[0] == atom.sass + decompression_sass(plan.decompress) for i in sass)


def test_an_element_in_the_padding_is_refused():
    src = pc.make_smem_tensor(pc.f4e2m1, Layout((128, 32), (32, 1)))    # 32 elements a row: 16 in the padding
    dst = pc.make_tmem_tensor(pc.u8, Layout((128, 32), (TLane, TCol)), columns=32)
    with pytest.raises(pc.PlanError, match="sits at nibble 16 of the buffer, in a unit's padding"):
        pc.make_tiled_copy(dst, src, decompress="b4x16_p64")


def test_the_generated_function_issues_the_decompressing_form():
    atom = cp_candidates(1)[0]
    plan = pc.make_tiled_copy(tmem_for(atom, 32), padded_fp4(128, 32, "none"), decompress="b4x16_p64")
    code = plan.cuda("copy_fp4")
    assert 'asm volatile("tcgen05.cp.cta_group::1.128x256b.b8x16.b4x16_p64 [%0], %1;"' in code
    assert "pycute_tcgen05_cp_128x256b_cg1_b4x16_p64(" in code and ", 1);" in code   # the soft model's fp4 flag
