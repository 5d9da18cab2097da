"""The grouped scheduler (pycute.pipeline.grouped): every tile of every group is computed by exactly one CTA, groups
of zero rows take none, a cluster's CTAs take adjacent tiles of one group; the generated forward cursor, interpreted,
walks what the model says over device offsets or counts, and clamps bounds the array cannot hold."""
import collections

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute.harness.grouped import GroupedProbe
from pycute.interp import run_kernel
from pycute.pipeline.grouped import make_grouped_scheduler


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.integers(0, 300), min_size=1, max_size=9), tn=st.integers(1, 5), cm=st.sampled_from([1, 2]),
       swizzle=st.integers(1, 3), sms=st.integers(1, 20))
def test_every_tile_of_every_group_is_computed_once(rows, tn, cm, swizzle, sms):
    plan = make_grouped_scheduler(64, cluster=(cm, 1), swizzle=swizzle).at(rows, tn)
    grid = plan.grid(sms * cm)
    counts = collections.Counter((t.group, t.m, t.n) for c in range(grid) for t in plan.tiles_of(c, grid) if t)
    want = {(g, m, n) for g, r in enumerate(rows) for m in range(-(-r // 64)) for n in range(tn)}
    assert set(counts) == want and set(counts.values()) <= {1}


def test_a_group_starts_where_the_previous_ends_and_empty_groups_take_no_tile():
    plan = make_grouped_scheduler(128).at([0, 77, 0, 300], 2)
    assert plan.starts() == [0, 0, 77, 77] and plan.group_units() == [0, 2, 0, 6]
    assert plan.tiles_of_unit(2)[0] == pc.pipeline.grouped.GroupTile(3, 0, 0, 77, 300)


def test_the_counts_form_pads_every_group_to_m_max():
    plan = make_grouped_scheduler(64, form="counts").at([5, 0, 64], 1, m_max=100)
    assert plan.starts() == [0, 100, 200] and plan.group_units() == [1, 0, 1]


@pytest.mark.parametrize("build, message", [
    (lambda: make_grouped_scheduler(64).at([3, -1], 2), r"group rows \(3, -1\) \(each at least 0\)"),
    (lambda: make_grouped_scheduler(64, form="counts").at([3, 9], 2, m_max=8), r"m_max=8 for groups of \(3, 9\)"),
    (lambda: make_grouped_scheduler(64, form="ragged"), r"form='ragged': 'offsets'"),
    (lambda: make_grouped_scheduler(64).units, r"the groups are run-time arguments"),
])
def test_bad_grouped_input_is_refused(build, message):
    with pytest.raises(pc.PlanError, match=message):
        build()


@pytest.fixture(scope="module", params=["offsets", "counts"])
def probe(request):
    plan = make_grouped_scheduler(64, form=request.param, cluster=(2, 1), swizzle=2)
    return plan, GroupedProbe(plan).compile()


@pytest.mark.parametrize("rows", [[70, 0, 130, 1, 0, 200], [0, 0, 64], [5], [0, 0]],
                         ids=["ragged with empty groups", "leading empty", "one group", "no rows at all"])
def test_the_generated_cursor_walks_the_models_tiles(probe, rows):
    plan, compiled = probe
    model = plan.at(rows, 3, m_max=200 if plan.form == "counts" else None)
    p = GroupedProbe(plan)
    out = np.zeros(2 * 6, np.uint64)
    extent = sum(rows) if plan.form == "offsets" else 200
    run_kernel(compiled, "grouped_probe", grid=6, block=32,
               args=dict(groups=p.device_groups(model), count=len(rows), extent=extent, tiles_n=3, out=out))
    assert np.array_equal(out.reshape(6, 2), p.expected(model, 6))


def test_device_bounds_past_the_array_are_clamped(probe):
    plan, compiled = probe
    p = GroupedProbe(plan)
    out = np.zeros(2 * 4, np.uint64)
    if plan.form == "offsets":      # ends 50, 40 (decreasing: empty), 500 (past the 300 rows: clamped)
        device, clamped, extent = np.array([50, 40, 500], np.int32), [50, 0, 250], 300
    else:                           # counts -3 (empty) and 90 (past m_max 64: clamped)
        device, clamped, extent = np.array([-3, 90, 7], np.int32), [0, 64, 7], 64
    run_kernel(compiled, "grouped_probe", grid=4, block=32,
               args=dict(groups=device, count=3, extent=extent, tiles_n=2, out=out))
    model = plan.at(clamped, 2, m_max=extent if plan.form == "counts" else None)
    assert np.array_equal(out.reshape(4, 2), p.expected(model, 4))
