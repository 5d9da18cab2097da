"""``pycute.kernels.grouped_mm``, the grouped GEMM of a mixture of experts, checked on the CPU through the
interpreter: one launch over groups whose sizes live on the device -- ``torch._grouped_mm``'s cumulative offsets
with empty groups and rows past the last group, or a padded batch's counts -- writes every group's bf16 product
exactly and nothing outside a group (those rows keep the NaN the output was filled with); the kernel compiles to
the planned instructions with no local memory; bad inputs are refused naming them."""
import pytest

torch = pytest.importorskip("torch")
import pycute as pc  # noqa: E402
import pycute.kernels  # noqa: E402
from pycute.kernels.grouped_gemm import HANDWRITTEN_LINES, GroupedGemm, grouped_candidates, kernel_body_lines  # noqa


def ints(*shape, seed):
    return torch.randint(-3, 4, shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def exact(a, b):
    return (a.double() @ b.double().T).to(torch.bfloat16)


def test_offsets_with_empty_groups_write_each_group_and_nothing_past_them():
    rows, N, K = [70, 0, 60, 1], 72, 72
    a, b = ints(sum(rows) + 6, K, seed=1), ints(len(rows), N, K, seed=2)
    offs = torch.tensor(rows, dtype=torch.int32).cumsum(0).to(torch.int32)
    d = pycute.kernels.grouped_mm(a, b, offs)
    starts = [0] + offs.tolist()[:-1]
    assert all(torch.equal(d[s:e], exact(a[s:e], b[g])) for g, (s, e) in enumerate(zip(starts, offs.tolist())))
    assert torch.isnan(d[offs[-1]:].float()).all()


def test_counts_of_a_padded_batch_write_each_groups_rows_only():
    counts, N, K = [5, 0, 64], 64, 64
    a, b = ints(3, 80, K, seed=3), ints(3, N, K, seed=4)
    d = pycute.kernels.grouped_mm(a, b, counts=torch.tensor(counts, dtype=torch.int32))
    for g, c in enumerate(counts):
        assert torch.equal(d[g, :c], exact(a[g, :c], b[g])) and torch.isnan(d[g, c:].float()).all()


@pytest.mark.parametrize("g", grouped_candidates("offsets"), ids=repr)
def test_each_configuration_compiles_to_its_wgmmas_and_loads_with_no_local_memory(g):
    h = g.compile().histogram()
    assert h.get(f"HGMMA.64x{g.BN}x16.F32.BF16") == 4 and h.get("UTMASTG.2D") == g.BN // 64
    assert h.get("UTMALDG.2D", 0) + h.get("UTMALDG.2D.MULTICAST", 0) == 2
    assert not any(op.startswith(("LDL", "STL")) for op in h)


def test_the_hand_written_lines_are_counted():
    assert kernel_body_lines() == HANDWRITTEN_LINES


@pytest.mark.parametrize("args, error", [
    (lambda: (ints(10, 16, seed=0), ints(2, 8, 16, seed=0), torch.tensor([3, 10]), None),
     r"the group sizes are int32 of shape \(2,\)"),
    (lambda: (ints(10, 16, seed=0), ints(2, 8, 24, seed=0), torch.tensor([3, 10], dtype=torch.int32), None),
     r"a is \(T, K\) with offs or \(G, M_max, K\) with counts, b \(G, N, K\); got \(10, 16\) and \(2, 8, 24\)"),
    (lambda: (ints(10, 16, seed=0), ints(2, 8, 16, seed=0), None, None), r"give the group sizes one way"),
])
def test_bad_grouped_input_is_refused(args, error):
    with pytest.raises(pc.LaunchError, match=error):
        a, b, offs, counts = args()
        pycute.kernels.grouped_mm(a, b, offs, counts=counts)


def test_a_configuration_must_tile_the_epilogue():
    with pytest.raises(pc.PlanError, match=r"BN=96, m_blocks=1: BN a multiple of 64"):
        GroupedGemm(BN=96)
