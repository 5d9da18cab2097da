"""The instruction descriptor: field by field from arch.sm100.mma, the legality table, and the traps public kernels
fell into (E2M1's code per kind, the block-scaled M field, SF ids, transposition and negation per kind)."""
import pytest

import pycute as pc
from pycute.arch.sm100.mma import BLOCK_SCALED_FIELDS, DENSE_FIELDS, MMA_KINDS
from pycute.mma import InstrDescriptor, make_instr_desc


def test_each_dense_field_lands_in_its_bits():
    d = make_instr_desc("f16", "bf16", "f16", "f32", 64, 136, "MN", "K", negate_b=True).fields
    assert (d["a_type"], d["b_type"], d["d_type"], d["m"], d["n"]) == (1, 0, 1, 64, 136)
    assert (d["transpose_a"], d["transpose_b"], d["negate_a"], d["negate_b"]) == (1, 0, 0, 1)
    value = make_instr_desc("f16", "bf16", "f16", "f32", 64, 136, "MN", "K", negate_b=True).value
    assert value == (1 << 4) | (1 << 7) | (1 << 14) | (1 << 15) | (136 >> 3 << 17) | (64 >> 4 << 24)


def test_decode_round_trips_and_refuses_reserved_bits():
    d = make_instr_desc("mxf4nvf4", "f4e2m1", "f4e2m1", None, 256, 128, cta_group=2, scale_type="ue4m3")
    assert InstrDescriptor.decode("mxf4nvf4", d.value) == d
    with pytest.raises(pc.DescriptorError, match="reserved for kind::mxf4nvf4"):
        InstrDescriptor.decode("mxf4nvf4", d.value | 1 << 24)
    assert "kind::mxf4nvf4, M256 N128, A f4e2m1 K, B f4e2m1 K, scale ue4m3" in repr(d)


def test_e2m1_is_5_in_the_f8f6f4_kinds_and_1_in_mxf4():
    assert make_instr_desc("f8f6f4", "f4e2m1", "f4e2m1").fields["a_type"] == 5
    assert make_instr_desc("mxf8f6f4", "f4e2m1", "f8e4m3").fields["a_type"] == 5
    assert make_instr_desc("mxf4", "f4e2m1", "f4e2m1").fields["a_type"] == 1
    assert make_instr_desc("mxf4nvf4", "f4e2m1", "f4e2m1").fields["b_type"] == 1


@pytest.mark.parametrize("m,cta_group", [(128, 1), (256, 2)])
def test_the_block_scaled_m_field_is_m_over_128_at_bits_27_28(m, cta_group):
    d = make_instr_desc("mxf8f6f4", "f8e4m3", "f8e4m3", None, m, 128, cta_group=cta_group)
    assert (d.value >> 27) & 3 == m >> 7 and (d.value >> 24) & 7 == 0


@pytest.mark.parametrize("kind,scale,vec,ids,bad", [("mxf8f6f4", "ue8m0", 1, (0, 1, 2, 3), 4),
                                                    ("mxf4", "ue8m0", 2, (0, 2), 1),
                                                    ("mxf4nvf4", "ue4m3", 4, (0,), 2)])
def test_sf_ids_are_the_bytes_their_scale_vec_allows(kind, scale, vec, ids, bad):
    for sf in ids:
        d = make_instr_desc(kind, *(["f8e4m3"] * 2 if kind == "mxf8f6f4" else ["f4e2m1"] * 2), scale_type=scale,
                            scale_vec=vec, sfa_id=sf, sfb_id=sf)
        assert (d.fields["sfa_id"], d.fields["sfb_id"]) == (sf, sf)
    with pytest.raises(pc.DescriptorError, match=f"SFA id {bad} with scale_vec::{vec}X"):
        make_instr_desc(kind, *(["f8e4m3"] * 2 if kind == "mxf8f6f4" else ["f4e2m1"] * 2), scale_type=scale,
                        scale_vec=vec, sfa_id=bad)


LEGAL_SHAPES = [(k, g, m, n) for k, kind in MMA_KINDS.items() for g in (1, 2) for m in kind.m_values[g]
                for n in (8, 16, 24, 32, 48, 64, 136, 256, 264) if not any((g, m) == o[0] for o in kind.open_shapes)]


@pytest.mark.parametrize("kind,cta_group,m,n", LEGAL_SHAPES, ids=[f"{k}-g{g}-M{m}-N{n}" for k, g, m, n in LEGAL_SHAPES])
def test_n_follows_the_legality_table(kind, cta_group, m, n):
    k = MMA_KINDS[kind]
    types = next(iter(k.operand_codes))
    args = dict(kind=kind, a_dtype=types, b_dtype=types, M=m, N=n, cta_group=cta_group)
    if k.n_legal(cta_group, n):
        assert make_instr_desc(**args).fields["n"] == n
    else:
        with pytest.raises(pc.DescriptorError, match=f"takes N from {k.n_step[cta_group]} to 256"):
            make_instr_desc(**args)


@pytest.mark.parametrize("args,match", [
    (dict(kind="mxf4", a_dtype="f4e2m1", b_dtype="f4e2m1", b_major="MN"), "kind::mxf4 does not transpose"),
    (dict(kind="f8f6f4", a_dtype="f6e3m2", b_dtype="f8e4m3", a_major="MN"), "f6e3m2 cannot be MN-major"),
    (dict(kind="i8", a_dtype="i8", b_dtype="u8", negate_b=True), "kind::i8 does not negate"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f16", saturate=True), "saturate is for kind::i8 only"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f8e4m3"), "kind::f16 takes B of f16, bf16, not f8e4m3"),
    (dict(kind="tf32", a_dtype="tf32", b_dtype="tf32", d_dtype="f16"), "accumulates in f32, not f16"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f16", M=256), r"cta_group::1 takes M in \(64, 128\), not 256"),
    (dict(kind="mxf8f6f4", a_dtype="f8e4m3", b_dtype="f8e4m3", M=64), r"takes M in \(128,\), not 64"),
    (dict(kind="mxf8f6f4", a_dtype="f8e4m3", b_dtype="f8e4m3", M=128, cta_group=2), "the PTX shape summary"),
    (dict(kind="mxf4", a_dtype="f4e2m1", b_dtype="f4e2m1", scale_type="ue4m3"), "scales with ue8m0, not ue4m3"),
    (dict(kind="mxf4nvf4", a_dtype="f4e2m1", b_dtype="f4e2m1", scale_type="ue4m3", scale_vec=2),
     "with ue4m3 takes scale_vec"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f16", sfa_id=1), "is not block-scaled"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f16", max_shift=8), "max_shift is a .ws field"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f16", ws=True, M=64, N=96), r"\.ws MMA M=64 N=96"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f16", ws=True, cta_group=2, M=128, N=128),
     "take cta_group::1 and a dense kind, not cta_group::2"),
    (dict(kind="mxf8f6f4", a_dtype="f8e4m3", b_dtype="f8e4m3", ws=True, M=128, N=128, scale_type="ue8m0",
          scale_vec=1), "take cta_group::1 and a dense kind, not cta_group::1 kind::mxf8f6f4"),
    (dict(kind="f64", a_dtype="f16", b_dtype="f16"), "unknown tcgen05.mma kind 'f64'"),
    (dict(kind="f16", a_dtype="f16", b_dtype="f16", a_major="M"), "major 'M' is 'K' or 'MN'"),
])
def test_illegal_combinations_are_refused_with_the_rule(args, match):
    with pytest.raises(pc.DescriptorError, match=match):
        make_instr_desc(**args)


def test_ws_takes_its_max_shift():
    d = make_instr_desc("f16", "f16", "f16", "f32", 64, 128, ws=True, max_shift=16)
    assert d.fields["max_shift"] == 2


def test_every_field_of_both_tables_is_inside_32_bits_and_they_do_not_overlap():
    for table in (DENSE_FIELDS, BLOCK_SCALED_FIELDS):
        bits = [b for f in table for b in range(f.lo, f.lo + f.width)]
        assert len(bits) == len(set(bits)) and max(bits) < 32


@pytest.mark.parametrize("kind, types, extra, bits", [
    ("f16", ("bf16", "bf16"), {"sparse_selector": 2}, 0b110),
    ("i8", ("i8", "i8"), {}, 0b100),
    ("mxf8f6f4", ("f8e4m3", "f8e4m3"), {"scale_type": "ue8m0", "scale_vec": 1}, 0b100),
])
def test_a_sparse_descriptor_sets_the_flag_and_the_selector(kind, types, extra, bits):
    dense = pc.make_instr_desc(kind, *types, **extra | {"sparse_selector": 0})
    sparse = pc.make_instr_desc(kind, *types, sparse=True, **extra)
    assert sparse.value == dense.value | bits and sparse.fields["sparse"] == 1
    assert "sparse A" in repr(sparse)


@pytest.mark.parametrize("kwargs, match", [
    ({"sparse_selector": 1}, "without sparse=True"),
    ({"sparse": True, "sparse_selector": 4}, "2 bits"),
    ({"sparse": 1}, "sparse must be a bool"),
])
def test_a_sparsity_selector_needs_a_sparse_dense_kind(kwargs, match):
    with pytest.raises((pc.DescriptorError, TypeError), match=match):
        pc.make_instr_desc("f16", "f16", "f16", **kwargs)


def test_a_block_scaled_descriptor_has_no_sparsity_selector():
    with pytest.raises(pc.DescriptorError, match="has no sparsity selector"):
        pc.make_instr_desc("mxf8f6f4", "f8e4m3", "f8e4m3", scale_type="ue8m0", scale_vec=1, sparse=True,
                           sparse_selector=1)
