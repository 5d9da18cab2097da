"""The static cost model and the report."""
import json
import subprocess
import sys

import pytest

import pycute as pc
from pycute.atoms import cp_candidates
from pycute.compile import compile_cuda
from pycute.compile.elf import kernel_resources
from pycute.copy.canonical import atom_tmem_tensor, kmajor_smem_tensor
from pycute.demo import demo_copies
from pycute.codegen.kernels import RoundTrip
from pycute.cost import copy_cost, hand_written_issue_loop, issue_overhead


def test_cost_of_the_article_demo():
    c = copy_cost(demo_copies()[0][1])
    assert (c.atom, c.instructions, c.utccp_in_sass, c.lower_bound) == ("32x128b.warpx4", 1, 1, 1)
    assert c.widest_legal == "32x128b.warpx4"
    assert c.model_clocks == 512 // 128 and c.probe_registers > 0 and c.roundtrip_registers > c.probe_registers


def test_lower_bound_uses_the_widest_legal_atom_not_the_forced_one():
    src = kmajor_smem_tensor(pc.bf16, 128, 32, "128B")[0:128, 0:32]
    plan = pc.make_tiled_copy(atom_tmem_tensor(pc.bf16, cp_candidates(1)[2], 32), src, shape="128x128b")
    c = copy_cost(plan)
    assert c.instructions == 4 and c.widest_legal == "128x256b" and c.lower_bound == 2


def test_issue_overhead_counts_everything_but_utccp_exit_nop_and_the_final_self_branch():
    sass = ["S2UR UR4, SR_CgaCtaId", "ELECT P1, URZ, PT", "UTCCP.T.S tmem[UR7], gdesc[UR4]",
            "PLOP3.LUT P0, PT, P1, PT, PT, 0x8, 0x80", "BRA.U.ANY `(.L_x_0)", "EXIT", "BRA `(.L_x_1)", "NOP"]
    assert issue_overhead(sass) == (4, 3)


@pytest.mark.parametrize("atom", cp_candidates(1), ids=lambda a: a.name)
def test_generated_code_needs_no_more_address_work_per_copy_than_a_hand_written_loop(atom):
    k = 4 * atom.bits // 16
    src = kmajor_smem_tensor(pc.bf16, atom.rows, k, "128B")[0:atom.rows, 0:k]
    plan = pc.make_tiled_copy(atom_tmem_tensor(pc.bf16, atom, k), src, shape=atom.shape,
                              multicast=atom.multicast or None)
    generated = copy_cost(plan)
    hand = issue_overhead(compile_cuda(hand_written_issue_loop(plan)).instructions())
    assert generated.utccp_in_sass == len(plan.instructions)
    assert generated.issue_other <= hand[0]


def test_kernel_resources_read_from_the_cubin():
    res = kernel_resources(RoundTrip(demo_copies()[1][1], "rt").compile().cubin)
    assert set(res) == {"rt_roundtrip"} and res["rt_roundtrip"]["registers"] >= 16
    assert res["rt_roundtrip"]["static_shared_bytes"] >= 12          # the TMEM address slot and the mbarrier
    with pytest.raises(pc.CompileError, match="not a 64-bit ELF"):
        kernel_resources(b"not an elf")


def test_report_prints_every_table_and_writes_json(tmp_path):
    out = tmp_path / "perf.json"
    r = subprocess.run([sys.executable, "-m", "perf.report", "--json", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    for title in ("Layout algebra", "vs CUTLASS pycute", "Planning", "Emission and compilation", "Emulator",
                  "GPU copy phase", "Static cost of the generated code"):
        assert title in r.stdout
    numbers = json.loads(out.read_text())
    assert numbers["plan.demo.cold_us"] > 0 and "report_seconds" in numbers
