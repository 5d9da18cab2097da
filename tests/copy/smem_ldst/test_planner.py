"""make_smem_copy: a register fragment (any thread-value layout) into a shared tile of any swizzle and back, with
the fewest shared-memory wavefronts the layouts allow, then the fewest instructions; f32 converted to the tile's
type on the way in; every plan emulated against the two layouts alone; typed refusals naming both layouts."""
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout
from pycute.copy.smem_ldst import make_smem_copy
from pycute.sim.verify_smem import verify_smem_copy

from .cases import DTYPES, cases, fragment, row_major, tile, wgmma_layout

STORES = cases()
LOADS = cases(dtypes=("bf16", "e4m3", "f32"))


@pytest.mark.parametrize("name,kind,dt,order,sw", STORES, ids=[c[0] for c in STORES])
def test_every_fragment_kind_stores_into_every_tile_exactly_with_the_fewest_wavefronts(name, kind, dt, order, sw):
    plan = make_smem_copy(tile(kind, dt, order, sw), fragment(kind))
    verify_smem_copy(plan, seed=len(name))
    assert plan.wavefronts == plan.min_wavefronts >= plan.ideal_wavefronts
    assert all(c.wavefronts is None or (c.wavefronts, c.instructions) >= (plan.wavefronts, len(plan.moves))
               for c in plan.candidates)


@pytest.mark.parametrize("name,kind,dt,order,sw", LOADS, ids=[c[0] for c in LOADS])
def test_every_fragment_kind_loads_back_from_every_tile_exactly(name, kind, dt, order, sw):
    plan = make_smem_copy(fragment(kind, DTYPES[dt]), tile(kind, dt, order, sw))
    verify_smem_copy(plan, seed=3)
    assert plan.op == "ld" and plan.wavefronts == plan.min_wavefronts


def test_the_hopper_gemm_epilogue_is_four_stmatrix_x4_per_64_columns_conflict_free():
    """wgmma f32 accumulator, bf16 out, 128B-swizzled row-major 64 x 256 tile: 16 x stmatrix.x4 per thread, each
    4 wavefronts per warp (512 B / 128 B), four per-thread bases, every other address an immediate offset."""
    frag = pc.make_fragment(pc.f32, 128, wgmma_layout(256))
    plan = make_smem_copy(pc.kmajor_smem_tensor(pc.bf16, 64, 256, "128B"), frag)
    assert [m.atom.ptx for m in plan.moves] == ["stmatrix.sync.aligned.m8n8.x4.shared.b16"] * 16
    assert plan.conversion.ptx == "cvt.rn.bf16x2.f32"
    assert plan.wavefronts == plan.ideal_wavefronts == 16 * 4 * 4
    assert plan.moves[0].words == ((0, 1), (2, 3), (4, 5), (6, 7))      # low half: the even column
    ap = plan.address_plan()
    assert [b.kind for b in ap.bases] == ["formula", "xor", "xor", "xor"]
    assert [u for u in ap.uses] == [(k % 4, 8192 * (k // 4)) for k in range(16)]


def test_a_tmem_32x32b_fragment_stores_whole_rows_as_16_byte_vectors():
    frag = fragment("tmem32")
    plan = make_smem_copy(row_major(pc.bf16, 128, 32, "64B"), frag)
    assert [m.atom.ptx for m in plan.moves] == ["st.shared.v4.b32"] * 4 and plan.wavefronts == plan.ideal_wavefronts


def test_fp8_transposed_output_uses_the_sm100a_8_bit_stmatrix_only_when_asked():
    t = tile("wgmma", "e4m3", "col", "32B")
    assert "m16n8" not in repr(make_smem_copy(t, fragment("wgmma")))
    plan = make_smem_copy(t, fragment("wgmma"), arch="sm_100a")
    assert [m.atom.ptx for m in plan.moves] == ["stmatrix.sync.aligned.m16n8.x4.trans.shared.b8"] * 2
    assert plan.targets[0] == "sm_100a" and "sm_90a" not in plan.targets
    verify_smem_copy(plan)


def test_a_conflicted_fragment_takes_the_fewest_wavefronts_and_explain_says_why():
    plan = make_smem_copy(tile("wgmma", "bf16", "row", "plain"), fragment("wgmma"))
    assert plan.wavefronts == plan.min_wavefronts == 8 * plan.ideal_wavefronts
    text = plan.explain()
    assert "8-way conflict" in text and "no form of these layouts avoids" in text
    assert "conflicts" not in make_smem_copy(tile("wgmma", "bf16", "row", "128B"), fragment("wgmma")).explain()


def test_explain_names_every_form_weighed_with_its_cost_or_rule():
    text = make_smem_copy(tile("wgmma", "bf16", "row", "128B"), fragment("wgmma")).explain()
    assert "st.shared 16 B" in text and "refused: values 0.. run 4 B" in text
    assert "st.shared 4 B                                  16 x, 64 wavefronts" in text
    assert "b1 = b0 ^ 0x20" in text


def test_a_run_time_stage_moves_every_address_by_its_step():
    buf = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), 2)[:, :, pc.dynamic("stage")]
    plan = make_smem_copy(buf, fragment("wgmma"))
    a0, a1 = plan.stream(0, thread=5, stage=0), plan.stream(0, thread=5, stage=1)
    assert [b.address - a.address for a, b in zip(a0, a1)] == [8192] * len(a0)
    verify_smem_copy(plan)


@settings(max_examples=25, deadline=None)
@given(st.permutations(range(12)), st.sampled_from(["bf16", "f32", "e4m3"]), st.sampled_from(["plain", "64B"]))
def test_any_thread_value_layout_of_the_tile_is_planned_exactly(bits, dt, sw):
    """A 64 x 64 tile's element index has 12 bits; the threads (128) take 7 of them and the values the other 5,
    in any order: the plan exists, emulates exactly and reaches the fewest wavefronts of its forms."""
    threads, values = bits[:7], bits[7:]
    layout = Layout(((2,) * 7, (2,) * 5), (tuple(1 << b for b in threads), tuple(1 << b for b in values)))
    frag = pc.make_fragment(pc.f32, 128, layout)
    plan = make_smem_copy(row_major(DTYPES[dt], 64, 64, sw), frag)
    verify_smem_copy(plan)
    assert plan.wavefronts == plan.min_wavefronts >= plan.ideal_wavefronts


def test_f32_converts_to_each_output_type_and_only_f32_converts():
    t = row_major(pc.bf16, 64, 64, "128B")
    assert make_smem_copy(t, fragment("wgmma"), satfinite=True).conversion.ptx == "cvt.rn.satfinite.bf16x2.f32"
    with pytest.raises(pc.PlanError, match="a store converts f32 only; it moves f16 registers and bf16 elements"):
        make_smem_copy(t, fragment("wgmma", pc.f16))
    with pytest.raises(pc.PlanError, match="a load moves bf16 registers and f8e4m3 elements unchanged"):
        make_smem_copy(fragment("wgmma", pc.bf16), row_major(pc.f8e4m3, 64, 64, "64B"))
    with pytest.raises(pc.PlanError, match=r"cvt.rn.e4m3x2.f32 always saturates"):
        make_smem_copy(row_major(pc.f8e4m3, 64, 64, "64B"), fragment("wgmma"), satfinite=False)
    with pytest.raises(pc.PlanError, match="satfinite applies to a conversion"):
        make_smem_copy(t, fragment("wgmma", pc.bf16), satfinite=True)


def test_an_impossible_pair_is_a_typed_error_naming_both_layouts():
    t = row_major(pc.bf16, 64, 64, "128B")
    with pytest.raises(pc.PlanError, match=r"fragment is of a \(128, 32\) tile, the shared tile is .*shapes differ"
                                           r"[\s\S]*fragment: rmem<f32>[\s\S]*tile: +smem<bf16>"):
        make_smem_copy(t, fragment("tmem32"))
    small = row_major(pc.bf16, 64, 32, "64B")
    with pytest.raises(pc.PlanError, match=r"value \d+ is element \d+ of a tile of 2048 elements .*not in the tile"
                                           r"[\s\S]*fragment:[\s\S]*tile:"):
        make_smem_copy(small, pc.make_fragment(pc.f32, 128, wgmma_layout(64)))
    twice = pc.make_fragment(pc.f32, 32, Layout((32, 2), (1, 0)))
    with pytest.raises(pc.PlanError, match=r"element 0 is held by \(thread, value\) \(0, 0\) and \(0, 1\)"):
        make_smem_copy(pc.make_smem_tensor(pc.f32, Layout(32, 1)), twice)
    with pytest.raises(pc.PlanError, match="the fragment has no \\(thread, value\\) layout"):
        make_smem_copy(t, pc.make_fragment(pc.f32, 128))
    with pytest.raises(TypeError, match="one tensor is a register fragment"):
        make_smem_copy(t, t)


def test_tiles_the_forms_cannot_address_are_refused_with_the_rule():
    with pytest.raises(pc.PlanError, match="XORs address bits above the buffer's 128-byte alignment"):
        swizzled = pc.ComposedLayout(pc.Swizzle(3, 3, 3), 0, Layout((64, 64), (64, 1)))
        make_smem_copy(pc.make_smem_tensor(pc.bf16, swizzled, base_align=128), fragment("wgmma"))
    with pytest.raises(pc.PlanError, match="f4e2m1 elements are 4 bits"):
        make_smem_copy(pc.make_smem_tensor(pc.f4e2m1, Layout((64, 64), (64, 1))), fragment("wgmma", pc.f4e2m1))


def test_the_stream_is_each_threads_address_per_instruction():
    plan = make_smem_copy(tile("wgmma", "bf16", "row", "128B"), fragment("wgmma"))
    issues = plan.stream(0x8000, thread=33)
    assert [i.ptx for i in issues] == [m.atom.ptx for m in plan.moves]
    assert [i.address for i in issues] == [0x8000 + int(m.addresses[33]) for m in plan.moves]
    with pytest.raises(pc.PlanError, match="not aligned to the 1024 B"):
        plan.stream(0x8010)
    with pytest.raises(pc.PlanError, match="thread 128 is not one of the plan's 128"):
        plan.stream(0, thread=128)


def test_copy_async_plans_register_to_shared_and_back():
    t = tile("wgmma", "bf16", "row", "128B")
    st_plan = pc.copy_async(t, fragment("wgmma"))
    assert st_plan.op == "st" and isinstance(st_plan, pc.Plan) and st_plan.src.space == "register"
    assert pc.copy_async(fragment("wgmma", pc.bf16), t).op == "ld"
    assert "m16n8" in repr(pc.copy_async(tile("wgmma", "e4m3", "col", "32B"), fragment("wgmma"), arch="sm_100a"))
    assert all(m.atom.ptx.startswith("st.shared") for m in pc.copy_async(t, fragment("wgmma"), arch="sm_80").moves)


def test_4_bit_elements_load_unpacked_with_the_sm100a_ldmatrix_forms():
    """32 padded units of 16 E2M1 elements (a unit per row): lane t takes row 8 g + t / 4, elements 4 (t % 4) ..
    + 3, one per byte [I: the element in the low bits]."""
    frag = pc.make_fragment(pc.u8, 32, Layout(((4, 8), (4, 4)), ((128, 1), (32, 8))))
    tile = pc.make_smem_tensor(pc.f4e2m1, Layout((32, 16), (32, 1)))
    plan = make_smem_copy(frag, tile, arch="sm_100a")
    assert [m.atom.ptx for m in plan.moves] == ["ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b4x16_p64"]
    assert plan.src is tile and "low bits of byte i" in plan.explain()
    verify_smem_copy(plan)
    with pytest.raises(pc.PlanError, match=r"unpack with sm_100a's ldmatrix .b8x16.b4x16_p64 \(arch='sm_100a'\)"):
        make_smem_copy(frag, tile)
    with pytest.raises(pc.PlanError, match="the fragment holds 8-bit containers"):
        make_smem_copy(pc.make_fragment(pc.f4e2m1, 32, frag.layout), tile, arch="sm_100a")
