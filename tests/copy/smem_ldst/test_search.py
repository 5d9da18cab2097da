"""The planner's search: the fewest shared-memory wavefronts of every plan the bank model scores, held to an
exhaustive search on small cases (``exhaustive.py``), ``min_wavefronts`` a true lower bound; the transposed stores
of tcgen05 fragments that a nearest-partner pairing put at twice the wavefronts."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout
from pycute.copy.smem_ldst import make_smem_copy
from pycute.copy.smem_ldst.pairing import pair_units
from pycute.sim.verify_smem import verify_smem_copy

from .cases import TRANSPOSED, col_major, fragment, row_major, tile
from .exhaustive import addresses, fewest_wavefronts

#: (dtype, rows, cols, values per thread): the value bits stay at 3 (or 4 for 8-bit units of two values) so that
#: the exhaustive search stays small.
SMALL = [(pc.bf16, 16, 16, 8), (pc.bf16, 32, 16, 8), (pc.bf16, 16, 32, 8), (pc.f8e4m3, 32, 16, 16),
         (pc.f8e4m3, 16, 32, 16), (pc.f32, 16, 16, 8)]


def _small_case(draw):
    """A small tile and a fragment of it: a random assignment of the tile's element bits (most significant in
    memory last) to the thread and value bits, often with the bits a matrix form needs in place (lanes 4t..4t+3
    along a 16-byte row for ``.trans``, lanes t%4 and value 0 along it without) so that the matrix families, and
    their pairings, are exercised."""
    dtype, rows, cols, values = draw(st.sampled_from(SMALL))
    order = draw(st.sampled_from([row_major, col_major]))
    sw = draw(st.sampled_from(["plain", "32B", "64B"]))
    try:
        tile = order(dtype, rows, cols, sw)
    except pc.PlanError:
        tile = order(dtype, rows, cols, "plain")
    n, v = (rows * cols).bit_length() - 1, values.bit_length() - 1
    r = rows.bit_length() - 1
    memory = list(range(n)) if order is col_major else [*range(r, n), *range(r)]   # coordinate bits, low first
    e_bits = (dtype.bits // 8).bit_length() - 1
    template = draw(st.sampled_from(["any", "trans", "plain"]))
    fixed = {}                                            # TV position (thread bit k or value bit "v0") -> memory bit
    if template == "trans":                               # lane bits 2-4: the 16-byte row's elements (e = 1: 8 of 16)
        fixed = {2: memory[0], 3: memory[1], 4: memory[2]}
    elif template == "plain" and e_bits < 2:              # lanes t%4 along the row, value 0 (then 1) inside a word
        inner = 2 - e_bits
        fixed = {**{f"v{k}": memory[k] for k in range(inner)}, 0: memory[inner], 1: memory[inner + 1]}
    positions = [*range(n - v), *(f"v{k}" for k in range(v))]
    rest = draw(st.permutations([m for m in range(n) if m not in fixed.values()]))
    free = iter(rest)
    assign = {p: fixed[p] if p in fixed else next(free) for p in positions}
    layout = Layout(((2,) * (n - v), (2,) * v), (tuple(1 << assign[k] for k in range(n - v)),
                                                 tuple(1 << assign[f"v{k}"] for k in range(v))))
    return tile, layout


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from(["st", "ld"]), st.sampled_from([None, "sm_100a"]))
def test_min_wavefronts_is_a_lower_bound_the_planner_reaches(data, op, arch):
    """Every small fragment (a random assignment of the tile's index bits to threads and values) into or out of a
    small tile: no plan the bank model scores takes fewer wavefronts than ``min_wavefronts``, and the plan takes
    exactly the fewest the exhaustive search finds."""
    tile, layout = _small_case(data.draw)
    threads = layout[0].size()
    frag = pc.make_fragment(pc.f32 if op == "st" else tile.dtype, threads, layout)
    try:
        plan = make_smem_copy(tile, frag, arch) if op == "st" else make_smem_copy(frag, tile, arch)
    except pc.PlanError:
        assert fewest_wavefronts(op, tile.bits // 8, addresses(tile, frag), op == "ld" or tile.dtype == pc.f32,
                                 arch) is None
        return
    fewest = fewest_wavefronts(op, tile.bits // 8, addresses(tile, frag), plan.conversion is None, arch)
    assert plan.min_wavefronts <= fewest
    assert plan.wavefronts == fewest == plan.min_wavefronts
    verify_smem_copy(plan)


def test_a_small_transposed_store_the_nearest_partner_pairing_put_at_twice_the_fewest():
    """64 threads store 8 values each into a 16 x 32 bf16 tile (32B swizzle) with stmatrix.trans: pairing each
    value with its nearest partner took 16 wavefronts (and called that the fewest); the exhaustive search finds 8."""
    tile = row_major(pc.bf16, 16, 32, "32B")
    frag = pc.make_fragment(pc.f32, 64, Layout(((2,) * 6, (2,) * 3), ((1, 2, 16, 32, 64, 4), (8, 128, 256))))
    plan = make_smem_copy(tile, frag)
    assert fewest_wavefronts("st", 2, addresses(tile, frag), False, None) == 8
    assert ".trans" in plan.moves[0].atom.ptx and plan.wavefronts == plan.min_wavefronts == 8
    verify_smem_copy(plan)


@pytest.mark.parametrize("name,kind,dt,order,sw,arch", TRANSPOSED, ids=[c[0] for c in TRANSPOSED])
def test_transposed_stores_of_tcgen05_fragments_pair_values_for_the_fewest_wavefronts(name, kind, dt, order, sw,
                                                                                      arch):
    """Each took twice the ideal with the nearest-partner pairing; the fewest is the ideal."""
    plan = make_smem_copy(tile(kind, dt, order, sw), fragment(kind), arch)
    assert ".trans" in plan.moves[0].atom.ptx
    assert plan.wavefronts == plan.min_wavefronts == plan.ideal_wavefronts
    verify_smem_copy(plan)
    plan.address_plan()                              # the generated code computes every address from one formula


def test_a_pairing_the_generated_code_cannot_address_is_passed_over_and_still_bounds_the_plan():
    """One warp, two units per row class: units 0 and 3 start their four rows in bank quads 0-3, units 1 and 2 in
    quads 4-7. Pairing 0 with 2 and 1 with 3 is conflict-free (2 wavefronts); when the address check refuses it,
    the other pairing (4) is returned and the bound stays 2."""
    low, high = [0, 16, 32, 48], [64, 80, 96, 112]
    even = np.array([[r + [-1] * 4] for r in (low, high, high, low)])          # class 0: rows 0-3 of the matrix
    odd = np.array([[[-1] * 4 + r] for r in (low, high, high, low)])           # class 1: rows 4-7
    units = [(0,), (1,), (2,), (3,)]
    fits = (np.array([True, True, False, False]), np.array([False, False, True, True]))
    free = pair_units(units, (even, odd), fits, None, lambda regs: True)
    assert free.registers == (((0,), (2,)), ((1,), (3,))) and free.wavefronts == free.bound == 2
    refused = pair_units(units, (even, odd), fits, None, lambda regs: ((0,), (2,)) not in regs)
    assert refused.registers == (((0,), (3,)), ((1,), (2,))) and refused.wavefronts == 4 and refused.bound == 2


def test_where_the_search_stops_min_wavefronts_is_its_bound_below_the_plan(monkeypatch):
    """Unit 3 starts all four of its rows in bank quad 0 (4 wavefronts beside unit 1's quads 4-7, 5 beside the
    others): the cheapest-partner bound says 4 wavefronts, every pairing takes 6. The search proves 6; stopped at
    once, it returns a pairing of 6 and keeps the bound 4."""
    import pycute.copy.smem_ldst.pairing as pairing
    quads = {0: [0, 1, 2, 3], 1: [4, 5, 6, 7], 2: [0, 1, 4, 5], 3: [0, 0, 0, 0]}
    starts = np.array([[[16 * q + 128 * k for k, q in enumerate(quads[u])] + [-1] * 4] for u in range(4)])
    odd = np.roll(starts, 4, axis=2)
    units = [(0,), (1,), (2,), (3,)]
    fits = (np.ones(4, dtype=bool), np.ones(4, dtype=bool))
    searched = pair_units(units, (starts, odd), fits, None, lambda regs: True)
    assert searched.wavefronts == searched.bound == 6
    monkeypatch.setattr(pairing, "STATE_LIMIT", 0)
    stopped = pair_units(units, (starts, odd), fits, None, lambda regs: True)
    assert stopped.wavefronts == 6 and stopped.bound == 4
