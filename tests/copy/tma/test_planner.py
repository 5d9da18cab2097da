"""make_tma_copy: the largest legal box from the shared tile's order, the tensor map's parameters, the refusals
(driver rules and what the H200 was measured to do), and every case emulated against the layouts alone."""
import re

import pytest

import pycute as pc
from pycute import Layout
from pycute.compile import compile_cuda, runtime
from pycute.copy.tma import make_tma_copy
from pycute.sim.verify import verify_tma

from .cases import CASES, MULTICAST, NAN_FILL, REDUCE

#: Stores whose last tile along the rows reaches a row's partial 16-byte unit (written whole: docs/tma.md).
STORE_REFUSED = {"bf16-kmajor-128B-K-not-atom", "f32-rows-not-16B", "bf16-rows-not-16B", "u8-rows-not-16B"}


@pytest.mark.parametrize("name,g,s,tiles", CASES, ids=[c[0] for c in CASES])
def test_every_load_emulates_as_the_layouts_say(name, g, s, tiles):
    verify_tma(make_tma_copy(s, g), seed=3)


@pytest.mark.parametrize("name,g,s,tiles", [c for c in CASES if c[0] not in STORE_REFUSED],
                         ids=[c[0] for c in CASES if c[0] not in STORE_REFUSED])
def test_every_store_emulates_as_the_layouts_say(name, g, s, tiles):
    verify_tma(make_tma_copy(g, s), seed=4)


@pytest.mark.parametrize("name,row,unit,past,last", [
    ("bf16-kmajor-128B-K-not-atom", 200, "192..207", 8, "t1 = 0"), ("f32-rows-not-16B", 120, "112..127", 8, "t1 = 0"),
    ("bf16-rows-not-16B", 200, "192..207", 8, "t1 = 1"), ("u8-rows-not-16B", 50, "48..63", 14, "t1 = 0")])
def test_a_tile_index_store_whose_last_tile_reaches_a_rows_partial_16_byte_unit_is_refused_naming_it(name, row, unit,
                                                                                                    past, last):
    _, g, s, _ = next(c for c in CASES if c[0] == name)
    with pytest.raises(pc.PlanError, match=rf"the array's rows are {row} B; a TMA store writes every 16-byte unit it "
                                           rf"touches whole .* \(row bytes {unit}: {16 - past} B of the row, {past} B "
                                           rf"past it\) overwrites those {past} B.*\({last}, the array's last along its "
                                           rf"rows\).*element coordinates"):
        make_tma_copy(g, s)


def test_a_kmajor_128B_bf16_tile_is_one_3d_box_with_the_swizzle_atoms_as_a_dimension():
    """The answer CuTe's make_tma_copy gives (docs/tma.md): 128 x 128 bf16 in SW128 atoms -> box (64, 128, 2) over
    the array viewed as (64, M, K/64), the third dimension 128 B apart; one instruction per tile."""
    g = pc.make_global_tensor(pc.bf16, Layout((1024, 512), (512, 1)))
    plan = make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B"), g)
    m = plan.tensor_map
    assert (m.box, m.global_dims, m.global_strides, m.swizzle.name) == ((64, 128, 2), (64, 1024, 8), (1024, 128), "128B")
    assert len(plan.instructions) == 1 and plan.expect_tx == 128 * 128 * 2
    assert plan.coords((3, 2)) == [(0, 384, 4)]


@pytest.mark.parametrize("name,boxes,box", [("f32-512-rows-two-boxes", 2, (32, 256)), ("f32-1d-512-widened-to-u64", 1, (256, 1)),
                                            ("bf16-kmajor-128B-K-not-atom", 2, (64, 128)), ("u8-5d", 1, (32, 8, 2, 1, 1)),
                                            ("f32-2d-plain", 1, (32, 64))])
def test_a_box_grows_until_a_rule_stops_it_and_the_rest_repeats_it(name, boxes, box):
    _, g, s, _ = next(c for c in CASES if c[0] == name)
    plan = make_tma_copy(s, g)
    assert len(plan.instructions) == boxes and plan.tensor_map.box == box
    assert plan.expect_tx == boxes * plan.tensor_map.box_bytes
    if boxes > 1:
        assert plan.rejected and "larger boxes refused" in plan.explain()


def test_a_rank_1_array_gets_a_size_1_second_dimension_because_the_driver_refuses_rank_1():
    g = pc.make_global_tensor(pc.f32, Layout(1000, 1))
    m = make_tma_copy(pc.make_smem_tensor(pc.f32, Layout(256, 1)), g).tensor_map
    assert m.rank == 2 and m.global_dims == (1000, 1) and m.global_strides == (4000,) and m.box == (256, 1)


BF16 = pc.make_global_tensor(pc.bf16, Layout((256, 128), (128, 1)))


@pytest.mark.parametrize("dst,src,error,match", [
    (pc.make_smem_tensor(pc.bf16, pc.ComposedLayout(pc.Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))), BF16,
     pc.PlanError, r"Sw<3,4,3> on 2-byte elements is Sw<3,5,3> on bytes.*128B = Sw<3,3,3>"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 64), (1, 64))), BF16, pc.PlanError,
     "the tile's first run in shared memory is along mode 0, not the contiguous mode 1"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1))), pc.make_global_tensor(pc.bf16, Layout((64, 64), (68, 1))),
     pc.PlanError, "array mode 0 has a stride of 136 B; a tensor map stride is a multiple of 16 B"),
    (pc.make_smem_tensor(pc.f32, Layout((64, 64), (64, 1))), BF16, pc.PlanError, "TMA copies values unchanged"),
    (pc.make_smem_tensor(pc.bf16, Layout((4, 4), (4, 1))), BF16, pc.PlanError, "the box's rows are 8 B"),
    (pc.make_smem_tensor(pc.bf16, pc.ComposedLayout(pc.Swizzle(3, 3, 3), 0, Layout((64, 32), (32, 1)))), BF16,
     pc.PlanError,
     "the box's rows are 64 B under the 128B swizzle, whose rows are 128 B"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1)), base_align=16), BF16, pc.PlanError,
     "needs 128-byte alignment"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 64), (128, 1))), BF16, pc.PlanError, "does not fill a dense run"),
    (pc.make_smem_tensor(pc.bf16, Layout(64, 1)), BF16, pc.PlanError, "the tile has 1 modes and the array 2"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1))), BF16[8:72, 0:64], pc.PlanError, "give the whole array"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1))), pc.make_smem_tensor(pc.bf16, Layout(4)), TypeError,
     "one tensor is a global array"),
])
def test_a_copy_tma_cannot_make_is_refused_naming_the_rule(dst, src, error, match):
    with pytest.raises(error, match=match):
        make_tma_copy(dst, src)


def test_copy_async_sends_global_and_shared_pairs_to_tma():
    s = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    assert pc.copy_async(s, BF16) == make_tma_copy(s, BF16)
    assert pc.copy_async(BF16, s).direction == "store"
    assert pc.copy_async(s, BF16, arch="sm_80").VARIANT == "cp_async"     # sm_80 has no TMA
    with pytest.raises(pc.PlanError, match="tma_store    not available on sm_80"):
        pc.copy_async(BF16, s, arch="sm_80")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("name", ["bf16-kmajor-128B", "f32-512-rows-two-boxes", "u8-5d", "f32-1d-512-widened-to-u64"])
def test_the_device_function_assembles_to_the_planned_tma_instructions(arch, name):
    _, g, s, _ = next(c for c in CASES if c[0] == name)
    load, store = make_tma_copy(s, g), make_tma_copy(g, s)
    n = len(load.tile_shape)
    tiles = ", ".join(f"int t{k}" for k in range(n))
    args = ", ".join(f"t{k}" for k in range(n))
    src = load.cuda("ld") + store.cuda("st").replace('#include "pycute/tma.cuh"\n', "") + f"""
extern "C" __global__ void k(const __grid_constant__ pycute_tensor_map map, unsigned smem, unsigned mbar, {tiles}) {{
  ld(&map, smem, mbar, {args});
  st(&map, smem, {args});
}}
"""
    h = compile_cuda(src, arch=arch).histogram()
    rank = load.tensor_map.rank
    assert h.get(f"UTMALDG.{rank}D", 0) == len(load.instructions)
    assert h.get(f"UTMASTG.{rank}D", 0) == len(store.instructions)
    assert re.search(rf"constexpr unsigned ld_expect_tx = {load.expect_tx}u;", load.cuda("ld"))


@pytest.mark.skipif(runtime.driver_available(), reason="this machine has a CUDA driver")
def test_encoding_a_tensor_map_without_a_driver_is_a_clear_error():
    plan = make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), BF16)
    with pytest.raises(pc.CompileError, match="encoding a tensor map needs the CUDA driver"):
        plan.tensor_map.encode(0x10000)


@pytest.mark.parametrize("name,tile", [("bf16-kmajor-128B", (2, 1)), ("f32-512-rows-two-boxes", (1, 0)),
                                       ("u8-5d", (1, 2, 1, 0, 0))])
def test_the_compiled_code_issues_the_plans_boxes(name, tile):
    """The PTX interpreter reads the compiled load and store back as the plan's own stream."""
    from pycute.interp.stream import trace_entry
    _, g, s, _ = next(c for c in CASES if c[0] == name)
    load, store = make_tma_copy(s, g), make_tma_copy(g, s)
    n = len(tile)
    tiles = ", ".join(f"int t{k}" for k in range(n))
    args = ", ".join(f"t{k}" for k in range(n))
    src = load.cuda("ld") + store.cuda("st").replace('#include "pycute/tma.cuh"\n', "") + f"""
extern "C" __global__ void k(const void* map, unsigned smem, unsigned mbar, {tiles}) {{
  ld(map, smem, mbar, {args});
  st(map, smem, {args});
}}
"""
    ptx = compile_cuda(src, arch="sm_90a").ptx
    thread = trace_entry(ptx, {0: 0x7000_0000, 1: 0x400, 2: 0x80, **{3 + k: t for k, t in enumerate(tile)}}, {}, "k")
    assert thread.tma == load.stream(0x400, *tile) + store.stream(0x400, *tile)


@pytest.mark.parametrize("name,g,s,ctas,tiles", MULTICAST, ids=[c[0] for c in MULTICAST])
def test_a_multicast_load_fills_every_cta_and_each_barrier_expects_the_whole_tile(name, g, s, ctas, tiles):
    plan = make_tma_copy(s, g, multicast=ctas)
    assert plan.expect_tx == make_tma_copy(s, g).expect_tx       # each CTA receives the whole tile
    assert plan.multicast.mask == (1 << ctas) - 1 and plan.tensor_map.box[-1] * ctas == make_tma_copy(s, g).tensor_map.box[-1]
    verify_tma(plan, seed=5)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_a_multicast_load_assembles_to_one_multicast_utmaldg_per_box(arch):
    _, g, s, ctas, _ = MULTICAST[1]
    src = make_tma_copy(s, g, multicast=ctas).cuda("ld") + \
        'extern "C" __global__ void k(const void* map, unsigned s, unsigned m, int a, int b) { ld(map, s, m, a, b); }'
    assert compile_cuda(src, arch=arch).histogram().get("UTMALDG.2D.MULTICAST") == 1


@pytest.mark.parametrize("kwargs,match", [
    (dict(multicast=0), "a multicast reaches 1 to 16 CTAs"),
    (dict(multicast=32), "a multicast reaches 1 to 16 CTAs"),
    (dict(multicast=3), "splits the box's outermost dimension, which is 128 long; it must be a multiple of 3"),
])
def test_a_multicast_pycute_cannot_split_is_refused(kwargs, match):
    with pytest.raises(pc.PlanError, match=match):
        make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), BF16, **kwargs)


def test_only_loads_multicast():
    with pytest.raises(pc.PlanError, match="only loads multicast"):
        make_tma_copy(BF16, pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), multicast=2)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_a_prefetch_names_the_loads_boxes_and_assembles_to_utmapf(arch):
    from pycute.interp.stream import trace_entry
    _, g, s, _ = next(c for c in CASES if c[0] == "f32-512-rows-two-boxes")
    load = make_tma_copy(s, g)
    prefetch = load.prefetch()
    assert [i.coords for i in prefetch.instructions] == [i.coords for i in load.instructions]
    prefetch.verify()
    src = prefetch.cuda("pf") + 'extern "C" __global__ void k(const void* map, int a, int b) { pf(map, a, b); }'
    compiled = compile_cuda(src, arch=arch)
    assert compiled.histogram().get("UTMAPF.L2.2D") == 2
    assert trace_entry(compiled.ptx, {0: 0x7000_0000, 1: 1, 2: 0}, {}, "k").tma == prefetch.stream(0, 1, 0)
    with pytest.raises(pc.PlanError, match="a prefetch is made from a load plan"):
        make_tma_copy(g, s).prefetch()


@pytest.mark.parametrize("name,g,s,op,tiles", REDUCE, ids=[c[0] for c in REDUCE])
def test_every_reduction_emulates_as_the_layouts_and_the_operation_say(name, g, s, op, tiles):
    plan = make_tma_copy(g, s, reduce=op)
    assert plan.reduce == op and plan.atom.sass == "UTMAREDG" and f".{op}.tile.bulk_group" in plan.atom.ptx
    verify_tma(plan, seed=6)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("op", ["add", "min", "xor"])
def test_a_reduction_assembles_to_utmaredg_of_its_operation(arch, op):
    s = pc.make_smem_tensor(pc.u32, Layout((32, 64), (64, 1)))
    g = pc.make_global_tensor(pc.u32, Layout((100, 64), (64, 1)))
    src = make_tma_copy(g, s, reduce=op).cuda("red") + \
        'extern "C" __global__ void k(const void* map, unsigned s, int a, int b) { red(map, s, a, b); }'
    assert compile_cuda(src, arch=arch).histogram().get(f"UTMAREDG.2D.{op.upper()}") == 1


@pytest.mark.parametrize("dtype,op,match", [(pc.f32, "min", ".min reduces u32, i32, u64, i64, f16, bf16 elements, not f32"),
                                            (pc.u8, "add", ".add reduces u32, i32, u64, f32, f16, bf16 elements, not u8"),
                                            (pc.u32, "mul", "TMA reduces with add, min, max")])
def test_a_reduction_ptx_does_not_define_is_refused(dtype, op, match):
    g = pc.make_global_tensor(dtype, Layout((64, 64), (64, 1)))
    with pytest.raises(pc.PlanError, match=match):
        make_tma_copy(g, pc.make_smem_tensor(dtype, Layout((32, 64), (64, 1))), reduce=op)


def test_a_load_does_not_reduce():
    with pytest.raises(pc.PlanError, match="a reduction goes from shared to global memory"):
        make_tma_copy(pc.make_smem_tensor(pc.u32, Layout((32, 64), (64, 1))),
                      pc.make_global_tensor(pc.u32, Layout((64, 64), (64, 1))), reduce="add")


@pytest.mark.parametrize("name,g,s,tiles", NAN_FILL, ids=[c[0] for c in NAN_FILL])
def test_the_nan_fill_loads_the_measured_nan_out_of_bounds(name, g, s, tiles):
    plan = make_tma_copy(s, g, oob_fill="nan")
    assert plan.tensor_map.oob_fill == 1 and "OOB fill NaN" in plan.explain()
    verify_tma(plan, seed=8)


@pytest.mark.parametrize("dst,src,match", [
    (pc.make_smem_tensor(pc.u32, Layout((32, 64), (64, 1))), pc.make_global_tensor(pc.u32, Layout((64, 64), (64, 1))),
     "the NaN fill is for loads of f16, bf16, f32, tf32, f64 elements, not a load of u32"),
    (pc.make_global_tensor(pc.f32, Layout((64, 64), (64, 1))), pc.make_smem_tensor(pc.f32, Layout((32, 64), (64, 1))),
     "not a store of f32"),
])
def test_the_nan_fill_is_refused_where_the_driver_or_ptx_do_not_define_it(dst, src, match):
    with pytest.raises(pc.PlanError, match=match):
        make_tma_copy(dst, src, oob_fill="nan")


def test_a_run_time_stage_of_the_tile_moves_every_box_and_is_a_parameter_of_the_function():
    ring = pc.make_smem_tensor(pc.bf16, pc.ComposedLayout(pc.Swizzle(3, 3, 3), 0, Layout((128, 64, 4), (64, 1, 8192))))
    plan = make_tma_copy(ring[:, :, pc.dynamic("stage")], BF16)
    assert [(s.name, s.extent, s.smem_step) for s in plan.stages] == [("stage", 4, 16384)]
    assert plan.stream(0, 1, 1, stage=3) == make_tma_copy(ring[:, :, 3], BF16).stream(0, 1, 1)
    assert "int t0, int t1, unsigned stage)" in plan.cuda("ld") and "smem + stage * 16384u" in plan.cuda("ld")
    plan.verify()
    with pytest.raises(pc.PlanError, match="stage=4 is outside"):
        plan.stream(0, 0, 0, stage=4)


def test_a_stage_that_would_misalign_the_boxes_is_refused():
    ring = pc.make_smem_tensor(pc.bf16, Layout((8, 64, 4), (64, 1, 520)))
    with pytest.raises(pc.PlanError, match="run-time index .stage. moves the tile by 1040 B"):
        make_tma_copy(ring[:, :, pc.dynamic("stage")], BF16)
