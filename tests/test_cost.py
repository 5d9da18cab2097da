"""The static cost model: issue cost against the CuTe DSL and the argued lower bound, and the report."""
import json
import subprocess
import sys

import pytest

import pycute as pc
from perf.cases import ATOMS, CUTE_DSL_ISSUE_COST, atom_copy, cute_comparison_copies
from pycute.atoms import cp_candidates
from pycute.harness.tcgen05_cp import RoundTrip
from pycute.compile.elf import kernel_resources
from pycute.atoms.tcgen05_cp import atom_tmem_tensor
from pycute.tensor.canonical import kmajor_smem_buffer
from pycute.cost import ISSUE_FLOOR, copy_cost, issue_costs, issue_floor
from pycute.demo import demo_copies


def test_cost_of_the_article_demo():
    c = copy_cost(demo_copies()[0][1])
    assert (c.atom, c.instructions, c.utccp_in_sass, c.lower_bound) == ("32x128b.warpx4", 1, 1, 1)
    assert c.widest_legal == "32x128b.warpx4" and c.issue.utccp == 1
    assert c.model_clocks == 512 // 128 and c.probe_registers > 0 and c.roundtrip_registers > c.probe_registers


def test_lower_bound_uses_the_widest_legal_atom_not_the_forced_one():
    src = kmajor_smem_buffer(pc.bf16, 128, 32, "128B")[0:128, 0:32]
    plan = pc.make_tiled_copy(atom_tmem_tensor(pc.bf16, cp_candidates(1)[2], 32), src, shape="128x128b")
    c = copy_cost(plan)
    assert c.instructions == 4 and c.widest_legal == "128x256b" and c.lower_bound == 2


COSTS = issue_costs(cute_comparison_copies())


@pytest.mark.parametrize("cost", COSTS, ids=lambda c: c.label)
def test_issue_code_is_at_or_below_the_cute_dsl(cost):
    assert cost.utccp == cost.copies
    assert cost.per_copy <= CUTE_DSL_ISSUE_COST[cost.label]


@pytest.mark.parametrize("name", ["128x256b-g1", "4x256b-g2", "64x128b.warpx2::01_23-g1", "32x128b.warpx4-g2"])
def test_each_further_copy_costs_one_instruction_the_bound(name):
    atom = ATOMS[name]
    plans = [(f"x{n}", pc.make_tiled_copy(*atom_copy(atom, n), cta_group=atom.cta_group, shape=atom.shape,
                                          multicast=atom.multicast or None)) for n in (1, 3, 8)]
    one, three, eight = issue_costs(plans)
    assert (three.other - one.other, eight.other - one.other) == (2, 7)


def test_no_issue_code_beats_the_argued_lower_bound():
    assert sum(ISSUE_FLOOR.values()) == issue_floor(1) == 8 and issue_floor(8) == 15
    assert all(c.other >= issue_floor(c.copies) and c.ratio >= 1 for c in COSTS)


def test_kernel_resources_read_from_the_cubin():
    res = kernel_resources(RoundTrip(demo_copies()[1][1], "rt").compile().cubin)
    assert set(res) == {"rt_roundtrip"} and res["rt_roundtrip"]["registers"] >= 16
    assert res["rt_roundtrip"]["static_shared_bytes"] >= 12          # the TMEM address slot and the mbarrier
    with pytest.raises(pc.CompileError, match="not a 64-bit ELF"):
        kernel_resources(b"not an elf")


def test_report_prints_every_table_and_writes_json(tmp_path):
    out = tmp_path / "perf.json"
    r = subprocess.run([sys.executable, "-m", "perf.report", "--quick", "--json", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    for title in ("Layout algebra", "CUTLASS pycute", "Planning", "Emission and compilation", "Emulator",
                  "GPU copy phase", "Issue code: non-UTCCP SASS per copy", "Issue code per atom",
                  "Static cost of the generated code"):
        assert title in r.stdout
    numbers = json.loads(out.read_text())
    assert numbers["plan.demo.cold_us"] > 0 and "report_seconds" in numbers
    algebra = {k: v for k, v in numbers.items() if k.startswith("algebra.")}
    assert {"algebra.crd2idx_hier", "algebra.zipped_divide_hier", "algebra.blocked_product"} <= set(algebra)
    assert all(v["cold_us"] > 0 and v["cached_us"] > 0 for v in algebra.values())
    if "algebra_vs_cutlass" not in numbers:          # CUTLASS pycute could be fetched: every shared op has its time
        assert sum("cutlass_us" in v for v in algebra.values()) == 19
    assert len(numbers["issue.matrix"]) == 192 and numbers["issue.matrix_median"] > 0
