"""The device function a user composes: its calling convention, its descriptor arithmetic and what it leaves out."""
import re

import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.arch.sm100 import SmemDescriptor
from pycute.atoms import cp_candidates
from pycute.codegen.tcgen05_cp import ISSUE_MODES, emit_device_function, emit_helpers, helper_name
from pycute.tensor.canonical import kmajor_smem_buffer, kmajor_smem_tensor


def sw128_plan(cta_group=1):
    src = kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    dst = pc.make_tmem_tensor(pc.bf16, pc.Layout((128, 64), (pc.TLane, pc.TCol)), columns=64)
    return pc.make_tiled_copy(dst, src, cta_group=cta_group)


def demo_plan(cta_group=1):
    src = pc.make_smem_tensor(pc.u8, pc.Layout((32, 16), (16, 1)))
    dst = pc.make_tmem_tensor(pc.u8, pc.Layout((32, 16), (pc.TLane, pc.TCol)), replica=pc.Layout(4, 32 * pc.TLane),
                              columns=32)
    return pc.make_tiled_copy(dst, src, cta_group=cta_group)


def body(code, name):
    return code[code.index(f"void {name}("):]


def live(code):
    return "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("//"))


COPY = re.compile(r"(\w+)\(tmem_base \+ 0x([0-9A-F]{8})u, (desc|pycute_smem_desc_add\(desc, (\d+)\))\);")


def test_the_descriptor_is_built_once_from_the_template_and_the_buffer_address():
    plan = sw128_plan()
    code = body(emit_device_function(plan, "copy_q"), "copy_q")
    assert code.count("pycute_smem_desc_at(") == 1
    assert f"const unsigned long long desc = pycute_smem_desc_at(0x{plan.descriptor.encode():016X}ull, smem_buffer);" \
        in code


def test_each_further_copy_advances_the_descriptor_by_its_offset_and_tmem_offsets_are_constants():
    plan = sw128_plan()
    calls = COPY.findall(body(emit_device_function(plan, "copy_q"), "copy_q"))
    assert [(int(t, 16), 16 * int(k or 0)) for _, t, _, k in calls] == [(i.tmem_offset, i.smem_offset)
                                                                        for i in plan.instructions]
    assert {c for c, _, _, _ in calls} == {helper_name(plan.atom)}


def test_a_region_that_starts_inside_the_buffer_offsets_the_address_not_the_template():
    # OR-ing a nonzero start field into the template would corrupt the address; the offset goes on the address.
    src = kmajor_smem_buffer(pc.bf16, 128, 64, "128B")[0:128, 8:16]
    plan = pc.make_tiled_copy(pc.make_tmem_tensor(pc.bf16, pc.Layout((128, 8), (pc.TLane, pc.TCol)), columns=32), src)
    assert plan.instructions[0].smem_offset == 16
    code = emit_device_function(plan, "copy_c")
    assert "pycute_smem_desc_at(0x4000404000010000ull, smem_buffer + 16u);" in code
    assert SmemDescriptor.decode(plan.descriptor.encode()).start_address == 0


def test_warp_convention_elects_one_lane_before_anything_else():
    code = body(emit_device_function(sw128_plan(), "copy_q"), "copy_q")
    first = [line.strip() for line in code.splitlines()[1:] if line.strip() and not line.strip().startswith("//")][0]
    assert first == "if (!pycute_elect_one_sync()) return;"
    assert "one lane, elected by elect.sync, issues every copy" in emit_device_function(sw128_plan(), "copy_q")


def test_elected_convention_issues_from_the_calling_thread():
    code = emit_device_function(sw128_plan(), "copy_q", issue="elected")
    assert "pycute_elect_one_sync()) return" not in body(code, "copy_q")
    assert "Call it from the one thread that issues" in code
    assert pc.make_tiled_copy(*_sw128_tensors()).cuda("copy_q", issue="elected") == code


def _sw128_tensors():
    src = kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    return pc.make_tmem_tensor(pc.bf16, pc.Layout((128, 64), (pc.TLane, pc.TCol)), columns=64), src


def test_unrolled_without_loops_and_a_single_copy_is_one_call():
    code = body(emit_device_function(demo_plan(), "copy_sf"), "copy_sf")
    assert "for (" not in code and "while" not in code
    assert code.count("pycute_tcgen05_cp_32x128b_warpx4_cg1(") == 1 and "pycute_smem_desc_add" not in code


def test_no_commit_or_wait_is_issued_but_the_commit_from_the_elected_lane_is_shown():
    code = emit_device_function(demo_plan(), "copy_sf")
    assert "commit" not in live(code) and "mbarrier" not in live(code) and "wait" not in live(code)
    assert "//   if (pycute_elect_one_sync()) pycute_tcgen05_commit<1>(mbarrier_smem_address);" in code


def test_the_elected_convention_shows_the_commit_without_an_election():
    code = emit_device_function(demo_plan(), "copy_sf", issue="elected")
    assert "//   pycute_tcgen05_commit<1>(mbarrier_smem_address);" in code


def test_cta_group_2_comment_shows_the_multicast_commit_and_the_even_cta():
    code = emit_device_function(demo_plan(2), "copy_sf2")
    assert "pycute_tcgen05_commit<2>(mbarrier_smem_address)" in code and "even CTA" in code
    header = pc.codegen.headers()["pycute/tcgen05.cuh"]
    commit_2 = header[header.index("void pycute_tcgen05_commit("):header.index("#endif  // PYCUTE_TCGEN05_CUH")]
    assert "multicast::cluster.b64 [%0], %1;" in commit_2 and "PYCUTE_PAIR_CTA_MASK" in commit_2


def test_the_real_build_issues_the_ptx_and_the_soft_build_calls_the_headers_model():
    code = live(emit_device_function(sw128_plan(), "copy_q"))
    real = code.index('asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;"')
    soft = code.index("pycute_soft_tcgen05_cp(128, 2, 1, pycute_tcgen05_cp_128x256b_cg1_lanes, 1, taddr, desc, 0);")
    assert code.index("#if defined(PYCUTE_SOFT_TCGEN05)") < soft < code.index("#else") < real


def test_the_header_comment_is_short_and_the_whole_explanation_is_on_request():
    plan = sw128_plan()
    short, full = emit_device_function(plan, "copy_q"), emit_device_function(plan, "copy_q", explain=True)
    head = short[short.index("// copy_q: generated by pycute"):short.index("void copy_q(")]
    assert "// 4 x tcgen05.cp.cta_group::1.128x256b (4096 B each; lower bound over all forms 4)" in head
    assert "// descriptor: swizzle B128, LBO 16 B, SBO 1024 B, template 0x4000404000010000" in head
    assert "wider candidates" not in head and len(head.splitlines()) <= 16
    assert "//   descriptor  swizzle B128, LBO 16 B, SBO 1024 B" in full and "//   chosen      128x256b" in full


def test_the_demos_generated_function_carries_at_most_15_comment_lines():
    """The function ``python -m pycute demo`` prints: the calling convention once (the line read back), what it
    copies, who calls it and how to commit; 17 lines said the convention twice and the descriptor twice."""
    from pycute.demo import demo_copies
    code = demo_copies()[0][1].cuda(name="copy_scale_factors")
    function = code[code.index("// pycute: called by"):]
    comments = [line for line in function.splitlines() if line.lstrip().startswith("//")]
    assert len(comments) <= 15, "\n".join(comments)
    assert sum("all 32 lanes" in line for line in comments) == 1 and sum("LBO" in line for line in comments) == 1


def test_the_function_includes_the_protocol_header_and_guards_its_form_wrapper_so_several_compose():
    a, b = emit_device_function(sw128_plan(), "f1"), emit_device_function(sw128_plan(), "f2")
    assert a.startswith('#include "pycute/sm100.cuh"\n') and "#ifndef PYCUTE_TCGEN05_CP_128X256B_CG1" in b
    compile_cuda(a + b)


def test_plan_cuda_method_is_the_emitter():
    plan = sw128_plan()
    assert plan.cuda(name="copy_q") == emit_device_function(plan, "copy_q")


@pytest.mark.parametrize("name", ["copy-q", "1copy", "", "int", "return", "main", "threadIdx", "__copy", "_Copy"])
def test_bad_function_name_is_refused(name):
    with pytest.raises(pc.CompileError, match="is not a C identifier a function can have"):
        emit_device_function(sw128_plan(), name)


@pytest.mark.parametrize("name", [None, 3])
def test_a_function_name_that_is_no_string_is_a_type_error(name):
    with pytest.raises(TypeError, match="name must be a string"):
        emit_device_function(sw128_plan(), name)


def test_unknown_calling_convention_is_refused():
    with pytest.raises(pc.CompileError, match=r"issue='thread': the calling convention is one of 'warp', 'elected'"):
        emit_device_function(sw128_plan(), "f", issue="thread")
    assert set(ISSUE_MODES) == {"warp", "elected"}


@pytest.mark.parametrize("atom", cp_candidates(1) + cp_candidates(2), ids=lambda a: a.ptx)
def test_every_form_has_its_ptx_in_one_wrapper(atom):
    code = emit_helpers([atom])
    assert code.count(f'asm volatile("{atom.ptx} [%0], %1;"') == 1
