"""The H200 run of issue 32's boxes and im2col (``python -m tools tma_every_box``) is built and compiled here, on a
machine without a GPU: every case's maps, plans and round-trip kernels (sm_90a), so that the one GPU command runs
whole."""
import pytest

from tools import tma_every_box as PROBE


def test_the_run_covers_every_group_and_case():
    names = PROBE.case_names()
    assert len(names) == len(set(names))
    assert {n.split("/")[0] for n in names} == set(PROBE.GROUPS)


@pytest.mark.parametrize("group", sorted(PROBE.GROUPS))
def test_every_kernel_the_h200_run_launches_compiles_for_sm_90a(group):
    for name in (n for n in PROBE.case_names() if n.startswith(group + "/")):
        verdict = PROBE.one(name, dry=True)
        assert verdict["case"] == name and ("compiled" in verdict or "params" in verdict)


def test_the_summary_names_each_case_and_its_verdict():
    table = PROBE._summary([{"case": "boxes/x", "ok": True, "tiles": [{"tile": [0], "smem": None, "array": None,
                                                                      "models": {"packed-rows": False,
                                                                                 "pattern-row-per-box-row": True}}]},
                            {"case": "encode/y", "ok": True, "encoded": False, "error": "CUDA_ERROR_INVALID_VALUE"}])
    assert "boxes/x" in table and "models: pattern-row-per-box-row" in table and "refused: CUDA_ERROR" in table
