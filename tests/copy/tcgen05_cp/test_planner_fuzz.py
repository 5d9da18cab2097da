"""Property-based fuzz of make_tiled_copy over legal and illegal layout pairs.

Every accepted plan is bit-exact in the emulator; every refusal is a PlanError (no other exception escapes); and an
inferred plan uses the widest form that fits: every wider form, asked for explicitly, is refused.
"""
from hypothesis import HealthCheck, given, settings, strategies as st

import pycute as pc
from pycute import ComposedLayout, Layout, PlanError, Swizzle, TCol, TLane, make_layout, make_smem_tensor, \
    make_tmem_tensor
from pycute.atoms import cp_candidates

from .layouts import SWIZZLE_BITS, atom_tmem, kmajor_smem

DTYPES = [pc.u8, pc.bf16, pc.f32]


def check(dst, src, cta_group):
    try:
        plan = pc.make_tiled_copy(dst, src, cta_group=cta_group)
    except PlanError:
        return None
    pc.verify_plan(plan, seed=1)
    for atom in cp_candidates(cta_group):
        if atom == plan.atom:
            break
        try:
            pc.make_tiled_copy(dst, src, cta_group=cta_group, shape=atom.shape, multicast=atom.multicast or None)
        except PlanError:
            continue
        raise AssertionError(f"{atom.name} fits but {plan.atom.name} was chosen")
    return plan


@st.composite
def near_canonical(draw):
    """A canonical K-major copy for a random atom, then random perturbations (most stay legal, some do not)."""
    group = draw(st.sampled_from([1, 2]))
    atom = draw(st.sampled_from(cp_candidates(group)))
    dtype = draw(st.sampled_from(DTYPES))
    swizzle = draw(st.sampled_from(["none", "32B", "64B", "128B"]))
    per_row = atom.bits // dtype.bits
    middle = draw(st.sampled_from([1, 2, 4]))
    k = middle * per_row
    k_off = draw(st.sampled_from([0, 0, per_row, 16 * 8 // dtype.bits, 1]))
    src = kmajor_smem(dtype, atom.rows, k + k_off, swizzle)
    try:
        src = src[0:atom.rows, k_off:k_off + k]
    except PlanError:
        src = src[0:atom.rows, 0:k]
    tmem_atom = draw(st.sampled_from([atom] * 3 + list(cp_candidates(group))))
    if tmem_atom.rows != atom.rows:
        tmem_atom = atom
    col_stride = draw(st.sampled_from([1, 1, 1, 2]))
    columns = draw(st.sampled_from([32, 64, 128]))
    dst = make_tmem_tensor(dtype, make_layout(tmem_atom.lane_pattern, Layout(k, col_stride * TCol)),
                           replica=draw(st.sampled_from([tmem_atom.replica, atom.replica, None])), columns=columns)
    return dst, src, group


@st.composite
def random_pair(draw):
    """Arbitrary small layouts with matching top-level extents: mostly illegal."""
    dtype = draw(st.sampled_from(DTYPES))
    rows = draw(st.sampled_from([4, 32, 64, 128]))
    cols = draw(st.sampled_from([4, 8, 16, 32]))
    split = draw(st.sampled_from([1, 2, 4]))
    s_strides = (draw(st.sampled_from([0, 4, 8, 16, 32, 64])), draw(st.sampled_from([1, 2, 128, 512])),
                 draw(st.sampled_from([1, 2, 8, 16])), draw(st.sampled_from([16, 64, 256, 1024])))
    src_layout = Layout(((rows // split, split), (cols // 2, 2)),
                        ((s_strides[0], s_strides[3]), (s_strides[2] if s_strides[2] < 8 else 1, s_strides[1])))
    sw = draw(st.sampled_from([None, None, Swizzle(1, 4, 3), Swizzle(3, (128 // dtype.bits).bit_length() - 1, 3),
                               Swizzle(2, 4, -3)]))
    src = make_smem_tensor(dtype, ComposedLayout(sw, 0, src_layout) if sw is not None else src_layout)
    lane = draw(st.sampled_from([1, 1, 2, 32]))
    col = draw(st.sampled_from([0, 1, 1, 2]))
    dst_layout = Layout(((rows // split, split), cols), ((lane * TLane, (rows // split) * lane * TLane),
                                                         col * TCol if col else 0))
    replica = draw(st.sampled_from([None, Layout(4, 32 * TLane), Layout(2, 64 * TLane), Layout(2, 32 * TLane)]))
    dst = make_tmem_tensor(dtype, dst_layout, replica=replica, columns=draw(st.sampled_from([32, 128, 512])))
    return dst, src, draw(st.sampled_from([1, 2]))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_canonical())
def test_near_canonical_pairs(case):
    check(*case)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_pair())
def test_random_pairs(case):
    check(*case)


def test_fuzz_sees_both_outcomes():
    """Guard against a vacuous fuzz: the structured generator's canonical seed cases are accepted."""
    atom = cp_candidates(1)[0]
    src = kmajor_smem(pc.bf16, 128, 32, "128B")[0:128, 0:32]
    assert check(atom_tmem(pc.bf16, atom, 32), src, 1) is not None
    assert check(atom_tmem(pc.bf16, cp_candidates(1)[5], 32), src, 1) is None
    assert SWIZZLE_BITS["128B"] == 3
