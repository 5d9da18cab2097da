"""Retargeting a plan's tensor map on the device (tensormap.replace, sm_90a): the fields that differ for a group,
derived from the plan's view of the array; a retargeted map equals the map pycute plans for the group itself; the
generated warp function, compiled and interpreted, writes exactly those fields and publishes the map; the emulator
models the map as fields; values the driver would refuse are refused (static) or trapped on (checked build)."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile import compile_cuda
from pycute.errors import EmulationError
from pycute.sim.executors.tma import TensorMap, TensorMapEdit, TensorMapPublish, replace_field
from pycute.interp.stream import trace_entry

A = pc.make_global_tensor(pc.bf16, Layout((1024, 256), (256, 1)))
TILE = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
SPLIT = pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B")          # K viewed in 64-element parts
LOAD = pc.make_tma_copy(TILE, A, origin=(pc.dynamic("row"), pc.dynamic("k")))


def same_map(a, b) -> bool:
    """Equal maps, but the stride of an extent-1 dimension (any legal stride reads the same bytes there)."""
    moving = lambda m: tuple(s for s, g in zip(m.global_strides, m.global_dims[1:]) if g > 1)   # noqa: E731
    return a.global_dims == b.global_dims and moving(a) == moving(b) and \
        (a.box, a.data_type, a.swizzle, a.oob_fill) == (b.box, b.data_type, b.swizzle, b.oob_fill)


def fields(r):
    return [(f.field, f.ordinal, f.value if f.name is None else f.name) for f in r.fields]


@pytest.mark.parametrize("group,want", [
    (Layout((1024, 256), (256, 1)), [("global_address", None, "address")]),
    (Layout((173, 256), (256, 1)), [("global_address", None, "address"), ("global_dim", 1, 173)]),
    (Layout((173, 192), (320, 1)), [("global_address", None, "address"), ("global_dim", 0, 192),
                                    ("global_dim", 1, 173), ("global_stride", 0, 640)]),
])
def test_a_static_group_writes_only_the_fields_that_differ(group, want):
    assert fields(LOAD.retarget(pc.make_global_tensor(pc.bf16, group))) == want


@pytest.mark.parametrize("tile", [TILE, SPLIT], ids=["one-atom", "split-K"])
@pytest.mark.parametrize("group", [Layout((173, 256), (256, 1)), Layout((60, 128), (384, 1)), Layout((5, 64), (64, 1))])
def test_the_retargeted_map_is_the_map_pycute_plans_for_the_group_itself(tile, group):
    g = pc.make_global_tensor(pc.bf16, group)
    plan = pc.make_tma_copy(tile, A, origin="element")
    assert same_map(plan.retarget(g).tensor_map(), pc.make_tma_copy(tile, g, origin="element").tensor_map)


def test_run_time_extents_and_strides_become_parameters_with_their_preconditions():
    plan = pc.make_tma_copy(SPLIT, A, origin="element")
    r = plan.retarget(extents=(pc.dynamic("rows"), pc.dynamic("cols")), strides=(pc.dynamic("ld"), None))
    assert r.names == ("rows", "cols", "ld")
    assert [p.rule for p in r.preconditions] == ["rows >= 1", "ld % 8 == 0", "ld >= 1", "cols % 64 == 0", "cols >= 1"]
    assert "global_stride[0] = ld x 2 B" in r.explain()
    assert r.tensor_map(rows=77, cols=128, ld=384) == pc.make_tma_copy(
        SPLIT, pc.make_global_tensor(pc.bf16, Layout((77, 128), (384, 1))), origin="element").tensor_map
    with pytest.raises(pc.PlanError, match=r"cols = 100 breaks cols % 64 == 0"):
        r.tensor_map(rows=77, cols=100, ld=384)
    assert "int rows, int cols, int ld)" in r.cuda("rt")


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(group=pc.make_global_tensor(pc.f32, Layout((64, 64), (64, 1)))), pc.PlanError, "the group holds f32"),
    (dict(group=pc.make_global_tensor(pc.bf16, Layout(64, 1))), pc.PlanError, "the group has 1 modes"),
    (dict(group=pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1)))), TypeError, "the group is a global tensor"),
    (dict(strides=(None, 2)), pc.PlanError, "its stride stays 1, not 2"),
    (dict(extents=(None, 100)), pc.PlanError, "extent 100 is not a whole number of the 64-element parts"),
    (dict(strides=(100, None)), pc.PlanError, "a tensor-map stride of 200 B"),
    (dict(extents=(1, 2, 3)), pc.PlanError, "extents has 3 entries"),
    (dict(extents=[pc.dynamic("smap"), None]), pc.PlanError, "clash with the generated function's own"),
    (dict(extents=5), TypeError, "extents must be a tuple"),
])
def test_a_group_the_map_cannot_take_is_refused_naming_the_value(kwargs, error, match):
    plan = pc.make_tma_copy(SPLIT, A, origin="element")
    with pytest.raises(error, match=match):
        plan.retarget(**kwargs)


def test_a_store_group_whose_rows_are_not_whole_16_byte_units_is_refused_or_a_precondition():
    store = pc.make_tma_copy(A, TILE, origin="element")
    with pytest.raises(pc.PlanError, match="a TMA store writes 16-byte units whole"):
        store.retarget(extents=(None, 100))
    r = store.retarget(extents=(None, pc.dynamic("cols")))
    assert "cols % 8 == 0" in [p.rule for p in r.preconditions]


@pytest.fixture(scope="module")
def compiled():
    r = LOAD.retarget(extents=(pc.dynamic("rows"), None), strides=(pc.dynamic("ld"), None))
    src = r.cuda("rt") + ('extern "C" __global__ void k(const pycute_tensor_map* t, void* g, const void* a, int rows, '
                          'int ld) { __shared__ alignas(128) unsigned char s[128]; rt(t, g, pycute_smem_address(s), '
                          'a, rows, ld); }')
    return r, compile_cuda(src, arch="sm_90a"), compile_cuda(src, arch="sm_90a", checked=True)


def test_the_compiled_retarget_writes_the_planned_fields_then_publishes_the_map(compiled):
    r, plain, _ = compiled
    thread = trace_entry(plain.ptx, {0: 0x5000, 1: 0x9000, 2: 0x12_3400, 3: 213, 4: 384}, {"s": 0x800}, "k")
    edits = [e for e in thread.tensormap if isinstance(e, TensorMapEdit)]
    assert [(e.field, e.ordinal, e.value) for e in edits] == r.edits(0x12_3400, rows=213, ld=384)
    assert thread.tensormap[-1] == TensorMapPublish(0x9000, 0x800, 128) and all(e.map_address == 0x800 for e in edits)
    fenced = TensorMap(LOAD.tensor_map, 0)
    for e in edits:
        fenced = replace_field(fenced, e.field, e.ordinal, e.value)
    assert fenced == TensorMap(r.tensor_map(rows=213, ld=384), 0x12_3400)


@pytest.mark.parametrize("address,rows,ld,match", [
    (0x12_3408, 213, 384, "address 123408 is not 16-byte aligned"),
    (0x12_3400, 0, 384, "rows = 0 breaks rows >= 1"),
    (0x12_3400, 5, 100, "ld = 100 breaks ld % 8 == 0"),
])
def test_the_checked_retarget_traps_on_values_the_driver_would_refuse(compiled, address, rows, ld, match):
    _, _, checked = compiled
    thread = trace_entry(checked.ptx, {0: 0x5000, 1: 0x9000, 2: address, 3: rows, 4: ld}, {"s": 0x800}, "k")
    assert thread.tensormap == [] and match in thread.trap


@pytest.mark.parametrize("field,ordinal,value,match", [
    ("global_address", None, 0x1008, "not 16-byte aligned"), ("global_dim", 1, 0, "outside"),
    ("global_stride", 0, 200, "not a multiple of 16"), ("global_dim", 2, 5, "ordinal 2 outside"),
    ("elemtype", None, 3, "is not modelled"),
])
def test_the_emulators_map_refuses_a_field_the_encoder_would_refuse(field, ordinal, value, match):
    with pytest.raises(EmulationError, match=match):
        replace_field(TensorMap(LOAD.tensor_map), field, ordinal, value)
