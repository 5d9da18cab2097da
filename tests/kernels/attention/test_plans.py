"""The attention kernel's plans: Q's, K's and V's rings laid one after another in the buffer, each filled by the
load warp's TMA and released by every consumer warpgroup (the pipeline checker finds no deadlock, early read or
early refill); S = Q K^T over both rings and O += P V with P in registers and V read MN-major; each warpgroup's O
staged in its own part of the tile's Q stage; the plans of a real problem issue the compiled kernel's boxes."""
import pytest

from pycute.kernels.attention.config import AttentionConfig
from pycute.kernels.attention.plans import AttentionPlans, Problem

CONFIGS = [AttentionConfig.choose(64), AttentionConfig.choose(128, causal=True), AttentionConfig.choose(256)]


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: c.name)
def plans(request):
    return AttentionPlans.template(request.param)


def test_the_rings_lie_one_after_another_within_the_configurations_shared_memory(plans):
    c = plans.config
    q_bytes, kv_bytes = c.tile_bytes
    assert (plans.q.start, plans.q.smem_bytes) == (0, c.q_stages * q_bytes)
    assert (plans.k.start, plans.k.smem_bytes) == (plans.q.smem_bytes, plans.q.smem_bytes + c.kv_stages * kv_bytes)
    assert (plans.v.start, plans.v.smem_bytes) == (plans.k.smem_bytes, plans.k.smem_bytes + c.kv_stages * kv_bytes)
    assert plans.v.smem_bytes + 1024 == c.smem_bytes


def test_every_consumer_warpgroup_releases_every_stage_the_load_warp_arms(plans):
    c = plans.config
    for pipe, tile in ((plans.q, c.tile_bytes[0]), (plans.k, c.tile_bytes[1]), (plans.v, c.tile_bytes[1])):
        assert (pipe.full[0].arrivals, pipe.full[0].tx, pipe.empty[0].arrivals) == (1, tile, 4 * c.consumers)
        assert pipe.producer.caller == "warp"
        pipe.verify()                  # every interleaving of the roles: no deadlock, early read or early refill


def test_s_is_q_k_transposed_and_o_accumulates_p_from_registers_times_v(plans):
    c = plans.config
    assert plans.qk.shape == (c.block_m, c.block_n, c.head_dim) and plans.qk.warpgroups == c.consumers
    assert plans.qk.stage_names == ("k_stage", "q_stage")
    assert plans.pv.shape == (64, c.head_dim, c.block_n) and plans.pv.a_in_registers
    assert plans.pv.b.major == "MN" and plans.pv.stage_names == ("v_stage",)


def test_each_warpgroups_o_is_staged_in_its_part_of_the_tiles_q_stage_and_stored_in_one_tma_store(plans):
    c = plans.config
    store = plans.store_o
    assert len(store.tma.instructions) == 1 and store.tile_shape == (64, c.head_dim, 1, 1)
    assert [s.name for s in store.store.stages] == ["q_stage", "wg"]
    steps = {s.name: s.smem_step for s in store.store.stages}
    assert steps == {"q_stage": c.tile_bytes[0] if c.q_stages > 1 else 0, "wg": c.tile_bytes[0] // c.consumers}


def test_the_consumers_take_turns_on_barriers_after_their_epilogues(plans):
    c = plans.config
    assert plans.turns.groups == c.consumers and plans.turns.barrier == 1 + c.consumers


@pytest.mark.parametrize("problem", [Problem.dense(3, 1000, 777, 16, 4, 128), Problem.dense(1, 64, 8192, 2, 1, 128)])
def test_the_plans_of_a_real_problem_issue_the_compiled_kernels_boxes(problem):
    c = AttentionConfig.choose(128)
    assert AttentionPlans.of(c, problem).issues_as(AttentionPlans.template(c))
