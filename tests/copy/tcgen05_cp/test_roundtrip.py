"""Round trips through the emulator: every atom x swizzle x dtype x middle x cta_group, against the layouts alone."""
import pytest

import pycute as pc
from pycute.atoms import cp_candidates

from .layouts import atom_tmem, kmajor_smem

DTYPES = [pc.f4e2m1, pc.u8, pc.bf16, pc.f32]   # f4e2m1: packed FP4 copied raw (no decompression)
SWIZZLES = ["none", "32B", "64B", "128B"]


def build(atom, swizzle, dtype, middle):
    per_row = atom.bits // dtype.bits
    k = middle * per_row
    src = kmajor_smem(dtype, atom.rows, k, swizzle)[0:atom.rows, 0:k]
    dst = atom_tmem(dtype, atom, k)
    return src, dst


CASES = [(atom, sw, dt, mid) for g in (1, 2) for atom in cp_candidates(g) for sw in SWIZZLES for dt in DTYPES
         for mid in (1, 4)]


@pytest.mark.parametrize("atom,swizzle,dtype,middle", CASES,
                         ids=[f"{a.name}-g{a.cta_group}-{s}-{d.name}-m{m}" for a, s, d, m in CASES])
def test_explicit_plan_round_trips(atom, swizzle, dtype, middle):
    src, dst = build(atom, swizzle, dtype, middle)
    plan = pc.make_tiled_copy(dst, src, cta_group=atom.cta_group, shape=atom.shape, multicast=atom.multicast or None)
    assert plan.atom == atom
    assert len(plan.instructions) == middle
    pc.verify_plan(plan, seed=middle)


@pytest.mark.parametrize("atom,swizzle,dtype,middle", CASES,
                         ids=[f"{a.name}-g{a.cta_group}-{s}-{d.name}-m{m}" for a, s, d, m in CASES])
def test_inferred_plan_never_uses_more_instructions_and_round_trips(atom, swizzle, dtype, middle):
    src, dst = build(atom, swizzle, dtype, middle)
    inferred = pc.make_tiled_copy(dst, src, cta_group=atom.cta_group)
    assert len(inferred.instructions) <= middle
    pc.verify_plan(inferred, seed=7)
