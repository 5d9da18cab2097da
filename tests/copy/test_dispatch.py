"""copy_async: the tensors' memory spaces pick the variant; a forced variant, an uncovered pair, an unknown option
and a copy no variant fits are refused with the variant x reason table."""
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.copy import VARIANTS


def smem():
    return pc.kmajor_smem_buffer(pc.bf16, 128, 64, "128B")[0:128, 0:64]


def tmem(dtype=pc.bf16, columns=32):
    return pc.make_tmem_tensor(dtype, Layout((128, 64), (TLane, TCol)), columns=columns)


def accumulator():
    return pc.mma_accumulator(pc.f32, 128, 64)


@pytest.mark.parametrize("pair", ["shared->tmem", "tmem->register", "register->tmem"])
def test_each_memory_pair_of_the_family_goes_to_its_planner_and_plans_what_the_direct_entry_plans(pair):
    if pair == "shared->tmem":
        plan, direct = pc.copy_async(tmem(), smem()), pc.make_tiled_copy(tmem(), smem())
    elif pair == "tmem->register":
        plan, direct = (pc.copy_async(pc.make_fragment(pc.f32, 128), accumulator()),
                        pc.make_tmem_copy(accumulator(), "ld", warps=4))
    else:
        plan, direct = (pc.copy_async(accumulator(), pc.make_fragment(pc.f32, 128)),
                        pc.make_tmem_copy(accumulator(), "st", warps=4))
    assert plan == direct and isinstance(plan, pc.Plan)
    assert f"{plan.src.space}->{plan.dst.space}" == pair


def test_the_table_has_one_row_per_variant_and_pair_and_every_row_names_its_targets():
    rows = {(v.name, v.src, v.dst) for v in VARIANTS}
    assert rows == {("tma_load", "global", "shared"), ("tma_store", "shared", "global"),
                    ("bulk_load", "global", "shared"), ("bulk_store", "shared", "global"),
                    ("cp_async", "global", "shared"), ("dsmem", "shared", "shared"),
                    ("tcgen05_cp", "shared", "tmem"), ("tcgen05_ld", "tmem", "register"),
                    ("tcgen05_st", "register", "tmem"), ("smem_st", "register", "shared"),
                    ("smem_ld", "shared", "register")}
    assert all("sm_100a" in v.targets and ("sm_90a" in v.targets) == (not v.name.startswith("tcgen05"))
               for v in VARIANTS)
    assert [v.name for v in VARIANTS if "sm_80" in v.targets] == ["cp_async", "smem_st", "smem_ld"]


def test_options_go_to_the_variant():
    plan = pc.copy_async(accumulator(), pc.make_fragment(pc.f32, 128), max_registers=64)
    assert plan.registers == 64 and len(plan.per_warp) == 1
    assert pc.copy_async(tmem(), smem(), shape="128x128b").atom.shape == "128x128b"


def test_a_fragment_layout_is_the_register_layout_asked_for():
    direct = pc.make_tmem_copy(accumulator(), "ld", warps=4)
    asked = pc.copy_async(pc.make_fragment(pc.f32, 128, direct.fragment), accumulator())
    assert asked.fragment == direct.fragment


def test_a_forced_variant_of_another_pair_is_refused_naming_its_pair():
    with pytest.raises(pc.PlanError, match="variant 'tcgen05_ld' copies tmem -> register, not shared -> tmem"):
        pc.copy_async(tmem(), smem(), variant="tcgen05_ld")


def test_an_unknown_variant_is_refused_listing_the_variants():
    with pytest.raises(pc.PlanError, match="no variant is named 'tma'.*tcgen05_cp"):
        pc.copy_async(tmem(), smem(), variant="tma")


def test_a_pair_no_variant_covers_is_refused_listing_the_covered_pairs():
    with pytest.raises(pc.PlanError, match=r"no variant copies tmem -> shared \(the family covers .*tcgen05_cp "
                                           r"shared->tmem.*smem_st register->shared, smem_ld shared->register\)"):
        pc.copy_async(smem(), tmem())
    g = pc.make_global_tensor(pc.bf16, Layout((128, 64), (64, 1)))
    with pytest.raises(pc.PlanError, match="no variant copies global -> tmem"):
        pc.copy_async(tmem(), g)


def test_when_nothing_fits_one_error_tabulates_every_variant_and_its_rule():
    row_major = pc.make_smem_tensor(pc.bf16, Layout((128, 64), (1, 128)))
    with pytest.raises(pc.PlanError) as info:
        pc.copy_async(tmem(), row_major)
    text = str(info.value)
    assert text.startswith("copy_async: no variant copies smem<bf16>")
    assert "\n  tcgen05_cp   no tcgen05.cp form fits this copy: tcgen05.cp does not transpose" in text


def test_a_target_without_the_instruction_is_a_reason_in_the_table():
    with pytest.raises(pc.PlanError, match="tcgen05_cp   not available on sm_90a"):
        pc.copy_async(tmem(), smem(), arch="sm_90a")
    assert pc.copy_async(tmem(), smem(), arch="sm_100a") == pc.make_tiled_copy(tmem(), smem())


def test_an_option_no_variant_of_the_pair_takes_is_a_type_error_naming_the_options():
    with pytest.raises(TypeError, match=r"option warps is taken by no variant of shared -> tmem \(tcgen05_cp: "):
        pc.copy_async(tmem(), smem(), warps=4)


def test_registers_and_tmem_of_different_types_are_refused():
    with pytest.raises(pc.PlanError, match="tcgen05.ld moves values unchanged: source f32, destination bf16"):
        pc.copy_async(pc.make_fragment(pc.bf16, 128), accumulator())


@pytest.mark.parametrize("bad,which", [(None, "src"), (Layout(4, 1), "src")])
def test_something_that_is_not_a_tensor_is_a_type_error(bad, which):
    with pytest.raises(TypeError, match=f"copy_async: {which} must be a pycute tensor"):
        pc.copy_async(tmem(), bad)


def test_verify_checks_every_variant_in_the_emulator():
    for plan in (pc.copy_async(tmem(), smem()), pc.copy_async(pc.make_fragment(pc.f32, 128), accumulator())):
        pc.verify(plan)
        plan.verify(seed=3)
    with pytest.raises(TypeError, match="verify: expected a copy plan"):
        pc.verify(smem())


# -- cp.async, bulk copies and DSMEM ---------------------------------------------------------------------------------
def _g(dtype, shape, stride):
    return pc.make_global_tensor(dtype, pc.Layout(shape, stride))


def _s(dtype, shape, stride):
    return pc.make_smem_tensor(dtype, pc.Layout(shape, stride))


def test_a_tile_tma_refuses_goes_to_cp_async_naming_why_tma_and_bulk_did_not_fit():
    g, s = _g(pc.f16, (100, 36), (36, 1)), _s(pc.f16, (64, 32), (32, 1))
    plan = pc.copy_async(s, g)
    assert plan.VARIANT == "cp_async" and plan.atom.size == 8
    with pytest.raises(pc.PlanError, match=r"tma_load .*stride of 72 B[\s\S]*bulk_load .*not a whole number of tiles"
                                           r"[\s\S]*cp_async .*not by transaction bytes"):
        pc.copy_async(s, g, completion="expect_tx")


@pytest.mark.parametrize("completion, variant", [(None, "tma"), ("expect_tx", "tma"), ("arrive", "cp_async"),
                                                 ("group", "cp_async")])
def test_the_callers_completion_is_never_dropped(completion, variant):
    g, s = _g(pc.bf16, (128, 64), (64, 1)), _s(pc.bf16, (64, 64), (64, 1))
    plan = pc.copy_async(s, g, completion=completion, threads=128)
    assert plan.VARIANT == variant and plan.completion == (completion or "expect_tx")


def test_each_forced_variant_plans_or_gives_its_own_reason():
    g, s = _g(pc.bf16, (128, 64), (64, 1)), _s(pc.bf16, (64, 64), (64, 1))
    assert pc.copy_async(s, g, variant="bulk_load").VARIANT == "bulk"
    assert pc.copy_async(g, s, variant="bulk_store").completion == "group"
    with pytest.raises(pc.PlanError, match="a bulk store completes by 'group', not the 'expect_tx' asked for"):
        pc.copy_async(g, s, variant="bulk_store", completion="expect_tx")


def test_shared_to_shared_is_a_dsmem_copy():
    plan = pc.copy_async(_s(pc.f32, (32, 32), (32, 1)), _s(pc.f32, (32, 32), (32, 1)))
    assert plan.VARIANT == "dsmem" and plan.expect_tx == 4096


def test_an_arch_without_tma_keeps_cp_async():
    g, s = _g(pc.bf16, (128, 64), (64, 1)), _s(pc.bf16, (64, 64), (64, 1))
    assert pc.copy_async(s, g, arch="sm_80").VARIANT == "cp_async"
