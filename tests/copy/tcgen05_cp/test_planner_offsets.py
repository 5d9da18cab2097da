"""Property-based fuzz of make_tiled_copy across shared-memory offsets up to and past 256 KiB and across swizzle
row lines: every accepted plan reads only addressable shared memory and is bit-exact in the emulator; every other
copy is refused with a PlanError."""
from hypothesis import HealthCheck, given, settings, strategies as st

import pycute as pc
from pycute import ComposedLayout, Layout, PlanError, make_smem_tensor
from pycute.arch.sm100.descriptor import START_ADDRESS
from pycute.arch.sm100.smem import SMEM_MAX_BYTES
from pycute.arch.sm100.swizzle_modes import SwizzleMode
from pycute.atoms import cp_candidates

from .layouts import atom_tmem, kmajor_smem

DTYPES = [pc.u8, pc.bf16, pc.f32]
SWIZZLES = ["none", "32B", "64B", "128B"]


def at_offset(tile, rows: int, k: int, offset_bytes: int):
    """The ``rows`` x ``k`` corner of ``tile`` placed ``offset_bytes`` into its buffer: a third mode of extent 2
    whose step is the offset, sliced at 1 (the region keeps the offset, as a user's slice of a larger buffer
    does)."""
    elements = offset_bytes * 8 // tile.bits
    inner = Layout(tile.layout.shape + (2,), tile.layout.stride + (elements,))
    whole = make_smem_tensor(tile.dtype, inner if tile.swizzle is None else ComposedLayout(tile.swizzle, 0, inner))
    return whole[0:rows, 0:k, 1]


@st.composite
def offset_copies(draw):
    group = draw(st.sampled_from([1, 2]))
    atom = draw(st.sampled_from(cp_candidates(group)))
    dtype = draw(st.sampled_from(DTYPES))
    swizzle = draw(st.sampled_from(SWIZZLES))
    k = draw(st.sampled_from([1, 2, 4])) * atom.bits // dtype.bits
    mode = SwizzleMode.from_label(swizzle)
    period, pitch = max(mode.period, 16), max(mode.row_pitch, 16)
    offset = draw(st.one_of(
        st.integers(0, (300 << 10) // 16).map(lambda u: 16 * u),                        # anywhere, 16-byte steps
        st.sampled_from([SMEM_MAX_BYTES - 4096, SMEM_MAX_BYTES - 1024, SMEM_MAX_BYTES, START_ADDRESS.limit - 1024,
                         START_ADDRESS.limit, START_ADDRESS.limit + 1024, 16 << 20]),   # the two limits
        st.tuples(st.integers(0, 200), st.integers(0, 7), st.sampled_from([0, 16, pitch // 2]))
          .map(lambda t: t[0] * period + t[1] * pitch + t[2]),                          # on and off row lines
    ))
    return group, atom, dtype, k, offset, at_offset(kmajor_smem(dtype, atom.rows, k, swizzle), atom.rows, k, offset)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offset_copies())
def test_every_accepted_offset_copy_is_addressable_and_bit_exact(case):
    group, atom, dtype, k, offset, src = case
    dst = atom_tmem(dtype, atom, k, columns=128)
    try:
        plan = pc.make_tiled_copy(dst, src, cta_group=group)
    except PlanError:
        return
    assert plan.smem_end <= SMEM_MAX_BYTES
    assert all(i.smem_offset + plan.atom.bytes <= plan.smem_end for i in plan.instructions)
    pc.verify_plan(plan, seed=3)


def test_a_copy_past_the_descriptor_reach_is_refused_with_both_limits():
    tile = kmajor_smem(pc.bf16, 128, 64, "128B")
    for offset, words in ((START_ADDRESS.limit, ("262144 B", "232448 B")), (SMEM_MAX_BYTES, ("232448 B",)),
                          (16 << 20, ("262144 B",))):
        try:
            pc.make_tiled_copy(atom_tmem(pc.bf16, cp_candidates(1)[0], 64), at_offset(tile, 128, 64, offset))
        except PlanError as e:
            assert all(w in str(e) for w in words), str(e)
        else:
            raise AssertionError(f"a copy {offset} B into its buffer was planned")


def test_the_issue_example_no_longer_rereads_the_first_copy():
    src = make_smem_tensor(pc.bf16, Layout((128, (8, 2)), (8, (1, 2 ** 17))))
    dst = pc.make_tmem_tensor(pc.bf16, Layout((128, 16), (pc.TLane, pc.TCol)), columns=32)
    try:
        pc.make_tiled_copy(dst, src)
    except PlanError as e:
        assert "reaches only 262144 B" in str(e)
    else:
        raise AssertionError("planned a copy whose second half aliases its first")


def test_the_largest_addressable_offset_is_planned_and_exact():
    tile = kmajor_smem(pc.bf16, 128, 64, "128B")
    last = SMEM_MAX_BYTES - 128 * 64 * 2          # the tile's 16 KiB end exactly at the CTA's shared memory
    plan = pc.make_tiled_copy(atom_tmem(pc.bf16, cp_candidates(1)[0], 64), at_offset(tile, 128, 64, last))
    assert plan.smem_end == SMEM_MAX_BYTES
    pc.verify_plan(plan)
