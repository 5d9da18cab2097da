"""A tcgen05 GEMM's mainloop and accumulator epilogue as plans (make_mma_mainloop, make_accumulator_epilogue): the
pieces are checked against each other and refused, naming the values, when they do not fit; the generated roles
take every column, count and coordinate from the plans and state their calling conventions. (The block-scaled GEMM
built on them runs whole on the CPU in tests/examples/test_blockscaled_gemm.py.)"""
import attrs
import pytest

import pycute as pc
from pycute import Layout
from pycute.codegen import read_conventions
from pycute.mma import scale_factor_smem, scale_factor_tensor

M, N, K, BK = 256, 256, 256, 128        # MXF8 (E4M3): a k-block is 128 elements, one 128B-swizzle row


def function(code, name):
    start = code.index(f" {name}(")
    return code[start:code.index("\n}", start)]


class Gemm:
    """The plans of a small MXF8 GEMM (cta_group ``g``) on a 128 x 128 tile per CTA, two accumulators."""

    def __init__(self, g: int):
        self.g = g
        a = pc.make_global_tensor(pc.f8e4m3, Layout((M, K), (K, 1)))
        b = pc.make_global_tensor(pc.f8e4m3, Layout((N, K), (K, 1)))
        self.a_tile = pc.kmajor_smem_tensor(pc.f8e4m3, 128, BK, "128B")
        self.b_tile = pc.kmajor_smem_tensor(pc.f8e4m3, 128 // g, BK, "128B")
        self.sf = [scale_factor_tensor("mxf8f6f4", 128, 4, 1, cta_group=g) for _ in range(2)]
        loads = {"a": pc.make_tma_copy(self.a_tile, a), "b": pc.make_tma_copy(self.b_tile, b)}
        for name, sf in zip(("sfa", "sfb"), self.sf):
            flat = pc.make_smem_tensor(pc.u8, Layout((512, 1, 1), (1, 512, 512)))
            packed = pc.make_global_tensor(pc.u8, Layout((512, K // BK, 2), (1, 512, 512 * K // BK)))
            loads[name] = pc.make_bulk_copy(flat, packed)
        self.loads = loads
        self.operands = pc.make_pipeline(loads, consumer=pc.Consumer("warp", 1, "commit", cta_group=g), stages=3,
                                         producer=pc.Producer("tma", "warp"), arch="sm_100a", name="ops")
        self.accumulators = pc.make_pipeline(consumer=pc.Consumer("warp", 4), stages=2, arch="sm_100a",
                                             producer=pc.Producer("commit", "warp", cta_group=g), name="acc")
        self.alloc = pc.TmemAllocation(cta_group=g)
        ring = pc.make_stages(pc.mma_accumulator(pc.f32, 128 * g, 128, g), 2)
        self.accumulator = self.alloc.add(pc.f32, ring.layout, name="accumulators")[:, :, pc.dynamic("acc")]
        self.copies = {}
        for which, sf in zip(("sfa", "sfb"), self.sf):
            sf_ring = pc.make_stages(sf.tensor, 3)
            tmem = self.alloc.add(pc.u8, sf_ring.layout, replica=sf_ring.replica, name=which)
            self.copies[which] = pc.make_tiled_copy(tmem[:, :, pc.dynamic("stage")],
                                                    self.operands.ring(which, scale_factor_smem(sf)), cta_group=g)
        self.mma = pc.make_mma(self.accumulator.at(acc=0), self.operands.ring("a"), self.operands.ring("b"),
                               sfa=self.sf[0], sfb=self.sf[1], kind="mxf8f6f4", scale_type="ue8m0", cta_group=g)

    def mainloop(self, **changes):
        kw = dict(accumulator=self.accumulator, modes={"a": "mk", "b": "nk", "sfa": "-km", "sfb": "-kn"},
                  tmem=self.alloc, threads=192, sf_copies=self.copies, name="gemm")
        kw.update(changes)
        return pc.make_mma_mainloop(kw.pop("operands", self.operands), kw.pop("accumulators", self.accumulators),
                                    kw.pop("mma", self.mma), **kw)

    def epilogue(self, tile=None, **kw):
        d = pc.make_global_tensor(pc.bf16, Layout((M, N), (N, 1)))
        tile = pc.kmajor_smem_tensor(pc.bf16, 128, 32, "64B") if tile is None else tile
        return pc.make_accumulator_epilogue(kw.pop("accumulators", self.accumulators), self.accumulator, d, tile,
                                            name="store", **kw)


@pytest.fixture(scope="module", params=[1, 2], ids=["cg1", "cg2"])
def gemm(request):
    return Gemm(request.param)


def test_a_ring_view_reads_the_loads_stages_at_the_same_bytes(gemm):
    flat, blocked = gemm.operands.ring("sfa"), gemm.operands.ring("sfa", scale_factor_smem(gemm.sf[0]))
    assert blocked.offset == flat.offset and blocked.dynamic[0].stride == flat.dynamic[0].stride
    assert blocked.dynamic[0].extent == gemm.operands.stages and blocked.layout.shape == ((32, 4), 4)


def test_a_ring_view_of_other_bytes_is_refused(gemm):
    with pytest.raises(pc.PlanError, match=r"holds 1024 B over a 1024 B stage, but a stage of load 'sfa' holds 512 B"):
        gemm.operands.ring("sfa", pc.make_smem_tensor(pc.u8, Layout(1024, 1)))


def test_the_roles_state_their_calling_conventions(gemm):
    plan = gemm.mainloop()
    conventions = read_conventions(plan.cuda())
    assert {f.name: f.convention for f in plan.functions}.items() <= conventions.items()
    assert conventions["gemm_start"] == pc.arch.convention.Convention("threads", 192)
    assert conventions["gemm_mma_tile"].caller == conventions["gemm_load_tile"].caller == "warp"
    assert conventions["ops_relay" if gemm.g == 2 else "gemm_mma"].caller == ("warp" if gemm.g == 2 else "elected")


def test_the_mma_tile_takes_its_columns_from_the_plans(gemm):
    plan = gemm.mainloop()
    body = function(plan.cuda(), "gemm_mma_tile")
    assert f"const unsigned d = tmem + acc.index * {plan.accumulator_columns}u;" in body
    assert plan.accumulator_columns == 128 and plan.sf_column("sfa") == (256, 4) and plan.sf_column("sfb") == (268, 4)
    assert "gemm_mma(smem, smem, d, tmem + 256u + st.index * 4u, tmem + 268u + st.index * 4u, kb > 0u ? 1u : 0u, " \
           "st.index);" in body
    assert ("ops_relay(bars, st)" in body) == (gemm.g == 2)
    assert body.index("acc_producer_acquire(acc_bars, acc)") < body.index("ops_consumer_wait") < \
        body.index("ops_consumer_release") < body.index("acc_producer_commit(acc_bars, acc)")


def test_the_loads_coordinates_follow_the_modes_and_split_b_over_a_pair(gemm):
    plan = gemm.mainloop()
    body = function(plan.cuda(), "gemm_load_tile")
    b = "tile.n * 2 + half" if gemm.g == 2 else "tile.n"
    assert f"ops_b(src_b, smem, full, {b}, int(kb), st.index);" in body
    assert "ops_sfb(src_sfb, smem, full, 0, int(kb), tile.n, st.index);" in body
    assert plan.coordinates("b", (3, 5), 2, rank=1) == ((11, 2) if gemm.g == 2 else (5, 2))
    assert plan.coordinates("sfa", (3, 5), 2, rank=1) == (0, 2, 3)


def test_start_and_finish_allocate_and_free_the_plans_columns(gemm):
    code = gemm.mainloop().cuda()
    g, cols = gemm.g, gemm.alloc.columns
    assert f"pycute_tmem_alloc<{g}>(slot, {cols}u);" in function(code, "gemm_start")
    assert f"if (allocates) pycute_tmem_dealloc<{g}>(tmem, {cols}u);" in function(code, "gemm_finish")
    sync = "pycute_cluster_sync();" if g == 2 else "__syncthreads();"
    assert sync in function(code, "gemm_start") and sync in function(code, "gemm_finish")


@pytest.mark.parametrize("change, error", [
    (lambda p: dict(operands=pc.make_pipeline(p.loads, consumer=pc.Consumer("warp", 1), stages=3, arch="sm_100a")),
     r"released by the MMA warp's commit"),
    (lambda p: dict(modes={"a": "mk", "b": "nk", "sfa": "-km"}), r"modes gives no coordinates for load 'sfb'"),
    (lambda p: dict(modes={"a": "kk", "b": "nk", "sfa": "-km", "sfb": "-kn"}), r"modes\['a'\] = 'kk'.*exactly one 'k'"),
    (lambda p: dict(modes={"a": "mk", "b": "nk", "sfa": "-km", "sfb": "-kn", "c": "mk"}), r"names \['c'\]"),
    (lambda p: dict(sf_copies={"sfa": p.copies["sfa"]}), r"reads scale factors \['sfa', 'sfb'\].*gives \['sfa'\]"),
    (lambda p: dict(sf_copies={"sfa": p.copies["sfb"], "sfb": p.copies["sfa"]}),
     r"reads SFA from load 'sfb', whose modes '-kn' do not follow the tile's m"),
    (lambda p: dict(modes={"a": "nk", "b": "mk", "sfa": "-km", "sfb": "-kn"}),
     r"reads A from load 'a', whose modes 'nk' do not follow the tile's m"),
    (lambda p: dict(accumulator=p.accumulator.at(acc=1)), r"one run-time index over the accumulator pipeline's 2"),
    (lambda p: dict(tmem=pc.TmemAllocation(cta_group=p.g)), r"is not placed in"),
    (lambda p: dict(threads=48), r"threads=48: the CTA's whole warps"),
    (lambda p: dict(operands=pc.make_pipeline(p.loads, consumer=pc.Consumer("warp", 1, "commit", cta_group=p.g),
                                              stages=3, arch="sm_100a", name="ops")),
     r"the operand pipeline's producer is the load warp .*producer=Producer\('tma', 'warp'\)"),
], ids=["release", "missing-mode", "two-k", "unknown-load", "missing-sf", "swapped-sf", "swapped-ab", "no-ring",
        "alloc", "threads", "elected-producer"])
def test_plans_that_do_not_fit_together_are_refused(gemm, change, error):
    with pytest.raises(pc.PlanError, match=error):
        gemm.mainloop(**change(gemm))


@pytest.mark.parametrize("a, error", [
    (lambda p: pc.make_stages(p.a_tile, 2)[:, :, pc.dynamic("stage")], r"plan it over the pipeline's ring"),
    (lambda p: attrs.evolve(p.operands.ring("a"), offset=1024), r"the MMA's A .* is no load's ring"),
    (lambda p: p.operands.ring("b"), r"reads A and B from the same load 'b'"),
], ids=["two-stages", "elsewhere", "same-load"])
def test_an_mma_reading_no_operand_ring_is_refused(a, error):
    p = Gemm(1)
    mma = pc.make_mma(p.accumulator.at(acc=0), a(p), p.operands.ring("b"), sfa=p.sf[0], sfb=p.sf[1],
                      kind="mxf8f6f4", scale_type="ue8m0")
    with pytest.raises(pc.PlanError, match=error):
        p.mainloop(mma=mma)


def test_the_accumulator_epilogue_reads_chunks_of_either_accumulator_and_stores_them_through_a_ring(gemm):
    plan = gemm.epilogue()
    assert [(s.name, s.extent, s.columns) for s in plan.read.stages] == [("chunk", 4, 32), ("acc", 2, 128)]
    assert plan.chunks == 4 and plan.slots == 2 and plan.smem_bytes == 2 * 8192
    assert plan.store.store.fragment.layout == plan.read.fragment
    body = function(plan.cuda(), "store_tile")
    assert "store_read(tmem, regs, chunk, acc.index);" in body
    assert "for (unsigned chunk = 0; chunk < 4u; ++chunk)" in body
    assert "store_store(map, smem, thread, frag, tile.m * 128, tile.n * 128 + int(chunk) * 32, chunk % 2u);" in body
    assert body.index("store_read") < body.index("acc_consumer_release") < body.index("store_store_wait")
    assert plan.origin((2, 3), 1) == (256, 416)


def test_the_accumulator_epilogue_states_its_conventions(gemm):
    plan = gemm.epilogue()
    conventions = read_conventions(plan.cuda())
    assert {f.name: f.convention for f in plan.functions}.items() <= conventions.items()
    assert conventions["store_tile"] == pc.arch.convention.Convention("warps", 128)


@pytest.mark.parametrize("kw, error", [
    (dict(slots=3), r"3 shared tile\(s\) for 4 chunks per tile: chunk c writes slot c % slots"),
    (dict(tile=pc.kmajor_smem_tensor(pc.bf16, 64, 32, "64B")), r"the shared tile is one whole chunk \(rows 128"),
    (dict(tile=pc.kmajor_smem_tensor(pc.bf16, 128, 48, "none")), r"a divisor of the 128 columns"),
], ids=["slots", "rows", "columns"])
def test_an_accumulator_epilogue_that_does_not_fit_is_refused(gemm, kw, error):
    with pytest.raises(pc.PlanError, match=error):
        gemm.epilogue(**kw)


def test_an_operand_pipeline_is_no_accumulator_pipeline(gemm):
    with pytest.raises(pc.PlanError, match=r"is not an accumulator pipeline"):
        gemm.epilogue(accumulators=gemm.operands)
