"""A pinned form (``make_smem_copy(..., form=...)``, as ``make_tiled_copy`` takes ``shape=``): the plan is that
instruction's, with the fewest wavefronts it reaches; a pin the copy's direction, target, element width or layouts
refuse is a PlanError naming the rule and the values. ``make_epilogue`` and ``copy_async`` take it too."""
import collections

import pytest

import pycute as pc
from pycute.copy.smem_ldst import make_epilogue, make_smem_copy
from pycute.sim.verify_smem import verify_smem_copy

from .cases import DTYPES, fragment, tile
from .compiled import compile_probe

ST, LD = "stmatrix.sync.aligned.m8n8", "ldmatrix.sync.aligned.m8n8"
#: (form, op, (kind, dtype, order, swizzle), arch, {instruction: per thread})
PINNED = [
    ("stmatrix", "st", ("wgmma", "bf16", "row", "128B"), None, {f"{ST}.x4.shared.b16": 4}),
    ("stmatrix.x2", "st", ("wgmma", "bf16", "row", "128B"), None, {f"{ST}.x2.shared.b16": 8}),
    ("stmatrix.sync.aligned.m8n8.x1.shared.b16", "st", ("wgmma", "bf16", "row", "128B"), None,
     {f"{ST}.x1.shared.b16": 16}),
    ("stmatrix.x2.trans", "st", ("wgmma", "bf16", "col", "64B"), None, {f"{ST}.x2.trans.shared.b16": 8}),
    ("stmatrix.x1.trans", "st", ("tmem16x128b", "bf16", "col", "128B"), None, {f"{ST}.x1.trans.shared.b16": 16}),
    ("st.shared.b32", "st", ("wgmma", "bf16", "row", "128B"), None, {"st.shared.b32": 16}),
    ("st.shared.b16", "st", ("wgmma", "bf16", "row", "128B"), None, {"st.shared.b16": 32}),
    ("st.shared", "st", ("tmem32", "bf16", "row", "64B"), None, {"st.shared.v4.b32": 4}),
    ("st.shared.v2.b32", "st", ("tmem32", "bf16", "row", "64B"), None, {"st.shared.v2.b32": 8}),
    ("stmatrix.m16n8.x2.trans", "st", ("wgmma", "e4m3", "col", "32B"), "sm_100a",
     {"stmatrix.sync.aligned.m16n8.x2.trans.shared.b8": 4}),
    ("ldmatrix.x1", "ld", ("wgmma", "bf16", "row", "128B"), None, {f"{LD}.x1.shared.b16": 16}),
    ("ldmatrix.x2.trans", "ld", ("wgmma", "bf16", "col", "32B"), None, {f"{LD}.x2.trans.shared.b16": 8}),
    ("ld.shared.b32", "ld", ("wgmma", "f32", "row", "32B"), None, {"ld.shared.b32": 32}),
]


def _plan(form, op, case, arch):
    kind, dt = case[0], case[1]
    t = tile(*case)
    if op == "st":
        return make_smem_copy(t, fragment(kind), arch, form=form)
    return make_smem_copy(fragment(kind, DTYPES[dt]), t, arch, form=form)


@pytest.mark.parametrize("form,op,case,arch,want", PINNED, ids=[p[0] for p in PINNED])
def test_a_pinned_form_is_the_plans_instruction_and_emulates_exactly(form, op, case, arch, want):
    plan = _plan(form, op, case, arch)
    assert dict(collections.Counter(m.atom.ptx for m in plan.moves)) == want
    assert plan.pinned == form and f"form={form!r}" in plan.explain()
    assert plan.wavefronts == plan.min_wavefronts
    verify_smem_copy(plan)


@pytest.mark.parametrize("form,op,case,arch", [("stmatrix.x1", "st", ("wgmma", "bf16", "row", "128B"), "sm_90a"),
                                               ("stmatrix.x2.trans", "st", ("wgmma", "bf16", "col", "64B"), "sm_90a"),
                                               ("ldmatrix.x2", "ld", ("wgmma", "bf16", "row", "128B"), "sm_90a"),
                                               ("stmatrix.m16n8.x1.trans", "st", ("wgmma", "e4m3", "col", "32B"),
                                                "sm_100a")])
def test_a_pinned_form_compiles_to_its_sass(form, op, case, arch):
    plan = _plan(form, op, case, arch)
    want = collections.Counter(m.atom.sass for m in plan.moves)
    ops = [i.split()[0] for i in compile_probe(plan, arch).instructions()]
    assert collections.Counter(o for o in ops if o.startswith(("STSM", "LDSM", "STS", "LDS"))) == want


def test_a_pin_takes_the_fewest_wavefronts_of_its_form_which_may_be_more_than_the_planners_choice():
    """A 128 x 32 bf16 column-major tile of a tcgen05 32x32b fragment: each thread's column is a run of single
    elements, so st.shared.b16 is conflict-free (128) and the pinned stmatrix cannot be (thread t's rows are t)."""
    free = _plan(None, "st", ("tmem32", "bf16", "col", "64B"), None)
    assert free.moves[0].atom.ptx == "st.shared.b16" and free.wavefronts == 128
    with pytest.raises(pc.PlanError, match=r"form 'stmatrix\.trans' cannot move the fragment:\n  stmatrix\.sync"
                                           r"\.aligned\.m8n8\.trans\.shared\.b16: value 0 fits no register"
                                           r"[\s\S]*fragment: rmem<f32>[\s\S]*tile: +smem<bf16>"):
        _plan("stmatrix.trans", "st", ("tmem32", "bf16", "col", "64B"), None)


REFUSED = [
    ("ldmatrix", "st", None, r"form 'ldmatrix': it loads; this copy stores a register fragment into a shared tile "
                             r"\(stmatrix or st\.shared\)"),
    ("st.shared.b32", "ld", None, r"form 'st\.shared\.b32': it stores; this copy loads"),
    ("stmatrix.x3", "st", None, r"'x3' is no qualifier of stmatrix \(\.sync \.aligned \.shared, a shape"),
    ("st.global.b32", "st", None, r"st\.global is no shared-memory store: the register <-> shared forms are "
                                  r"st\.shared and stmatrix"),
    ("st.shared.v4.b16", "st", None, r"st\.shared\.v4\.b16 is no width pycute moves: st\.shared\.v4\.b32, "),
    ("cp.async", "st", None, r"it names no register <-> shared instruction"),
    ("stmatrix.m16n8.trans", "st", None, r"stmatrix\.sync\.aligned\.m16n8\.x4\.trans\.shared\.b8 is a form of "
                                         r"sm_100a, .*; the copy targets sm_90a \(pass arch='sm_100a'\)"),
    ("stmatrix", "st", "sm_80", r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16 needs one of sm_90, .*not sm_80"),
    ("stmatrix.m16n16", "st", "sm_100a", r"no stmatrix form has these qualifiers; the forms are stmatrix\.sync"),
    ("stmatrix.x4", "st", None, r"form 'stmatrix\.x4' cannot move the fragment:\n  stmatrix\.sync\.aligned\.m8n8"
                                r"\.x4\.shared\.b16: 2 register\(s\) are left, fewer than stmatrix\.sync\.aligned"
                                r"\.m8n8\.x4\.shared\.b16 moves\n  fragment: rmem<f32>"),
]


@pytest.mark.parametrize("form,op,arch,message", REFUSED, ids=[r[0] + "-" + r[1] for r in REFUSED])
def test_an_illegal_pin_is_refused_naming_the_rule_and_the_values(form, op, arch, message):
    case = ("wgmma", "bf16", "row", "128B")
    if form == "stmatrix.x4":                         # an 8 x 16 tile, 2 registers per thread: one .x2, no .x4
        frag = pc.make_fragment(pc.f32, 32, pc.Layout(((4, 8), (2, 2)), ((16, 1), (8, 64))))
        with pytest.raises(pc.PlanError, match=message):
            make_smem_copy(pc.make_smem_tensor(pc.bf16, pc.Layout((8, 16), (16, 1))), frag, form=form)
        return
    with pytest.raises(pc.PlanError, match=message):
        _plan(form, op, case, arch)


def test_the_element_width_refuses_a_pin_that_cannot_hold_it():
    with pytest.raises(pc.PlanError, match=r"form 'stmatrix\.trans': stmatrix\.sync\.aligned\.m8n8\.x4\.trans\."
                                           r"shared\.b16 transposes 16-bit elements; the tile's are 8-bit"):
        _plan("stmatrix.trans", "st", ("wgmma", "e4m3", "col", "32B"), None)
    with pytest.raises(pc.PlanError, match=r"form 'st\.shared\.b8' moves 1 byte\(s\) per thread; a tile element "
                                           r"is 2"):
        _plan("st.shared.b8", "st", ("wgmma", "bf16", "row", "128B"), None)
    with pytest.raises(TypeError, match=r"form must be a PTX instruction name .* got 4"):
        _plan(4, "st", ("wgmma", "bf16", "row", "128B"), None)


def test_the_epilogue_and_copy_async_take_the_pin():
    t = tile("wgmma", "bf16", "row", "128B")
    array = pc.make_global_tensor(pc.bf16, pc.Layout((128, 128), (128, 1)))
    epilogue = make_epilogue(fragment("wgmma"), t, array, form="stmatrix.x2")
    assert {m.atom.ptx for m in epilogue.store.moves} == {f"{ST}.x2.shared.b16"}
    assert pc.copy_async(t, fragment("wgmma"), form="st.shared.b32").moves[0].atom.ptx == "st.shared.b32"
    assert pc.copy_async(fragment("wgmma", pc.bf16), t, form="ldmatrix.x1").moves[0].atom.ptx == f"{LD}.x1.shared.b16"
    with pytest.raises(pc.PlanError, match=r"smem_st +make_smem_copy: form 'ldmatrix': it loads"):
        pc.copy_async(t, fragment("wgmma"), form="ldmatrix")


def test_a_4_bit_load_takes_only_an_unpacking_ldmatrix_pin():
    frag = pc.make_fragment(pc.u8, 32, pc.Layout(((4, 8), (4, 4)), ((128, 1), (32, 8))))
    packed = pc.make_smem_tensor(pc.f4e2m1, pc.Layout((32, 16), (32, 1)))
    plan = make_smem_copy(frag, packed, arch="sm_100a", form="ldmatrix.m8n16.x2.b8x16.b4x16_p64")
    assert [m.atom.ptx for m in plan.moves] == ["ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b4x16_p64"] * 2
    verify_smem_copy(plan)
    with pytest.raises(pc.PlanError, match=r"form 'ld\.shared\.b8': 4-bit elements load with the unpacking "
                                           r"ldmatrix forms only"):
        make_smem_copy(frag, packed, arch="sm_100a", form="ld.shared.b8")
    with pytest.raises(pc.PlanError, match=r"form 'ldmatrix\.b8x16\.b4x16_p64': the unpacking ldmatrix forms load "
                                           r"4-bit elements"):
        make_smem_copy(fragment("wgmma", pc.bf16), tile("wgmma", "bf16", "row", "128B"), arch="sm_100a",
                       form="ldmatrix.b8x16.b4x16_p64")
