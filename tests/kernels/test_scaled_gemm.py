"""``pycute.kernels.scaled_gemm``, the Hopper GEMM with fp8 scales, checked on the CPU through the interpreter:
DeepSeek-V3 block scales applied at each promotion and row x column scales applied in the epilogue give the bf16
rounding of the exact scaled product (small integers and power-of-two scales: every step exact), on ragged problems
whose tiles the op may also share (split-K); configurations a second accumulator cannot fit are refused; the fake
implementation gives the output's shape."""
import pytest

torch = pytest.importorskip("torch")
import pycute as pc  # noqa: E402
import pycute.kernels  # noqa: E402
from pycute.kernels.hopper_gemm import HopperGemm  # noqa: E402
from pycute.kernels.hopper_gemm import scaled  # noqa: E402
from pycute.mma.fp8_scaling import make_fp8_scaling  # noqa: E402
from pycute.pipeline.split_k import KSplit  # noqa: E402


def operands(kind, promote, M, N, K, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-4, 5, (M, K), generator=g).to(torch.float8_e4m3fn)
    b = torch.randint(-4, 5, (N, K), generator=g).to(torch.float8_e4m3fn)
    plan = make_fp8_scaling(kind, (128, 128), interval=promote or None)
    sa = 2.0 ** torch.randint(-2, 3, plan.a_scales(M, K), generator=g).float()
    sb = 2.0 ** torch.randint(-2, 3, plan.b_scales(N, K), generator=g).float()
    return a, b, sa, sb, plan


@pytest.mark.parametrize("kind, promote, mnk, split", [("block", 1, (40, 136, 256), None),
                                                      ("rowcol", 2, (40, 64, 640), KSplit.split(1, 2))],
                         ids=["block scales, every k-block", "row x column scales, every 2 k-blocks, split-K by 2"])
def test_the_scaled_op_writes_the_rounded_exact_scaled_product(kind, promote, mnk, split):
    a, b, sa, sb, plan = operands(kind, promote, *mnk, seed=len(kind))
    g = HopperGemm(dtype="e4m3", BN=128, consumers=1, stages=3, scales=kind, promote=promote, split_k=bool(split))
    units = -(-mnk[1] // 128)
    d = scaled._cpu(a, b, sa, sb, kind, promote, 0.5, (g, split or KSplit.data_parallel(units)))
    want = torch.from_numpy(plan.reference(a.float().numpy(), b.float().numpy(), sa.numpy(), sb.numpy()) * 0.5)
    assert d.shape == mnk[:2] and torch.equal(d, want.to(torch.bfloat16))


def test_the_fake_implementation_gives_the_outputs_shape():
    a, b, sa, sb, _ = operands("block", 1, 100, 136, 384, 0)
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        d = torch.ops.pycute.scaled_gemm(*(mode.from_tensor(t) for t in (a, b, sa, sb)), "block", 1, 1.0)
    assert d.shape == (100, 136) and d.dtype == torch.bfloat16


def test_scales_of_the_wrong_shape_are_refused_naming_both():
    a, b, sa, sb, _ = operands("block", 1, 100, 136, 384, 0)
    with pytest.raises(pc.LaunchError, match=r"block scales for 100 x 136 x 384 are float32 of shapes \(3, 100\) "
                                             r"and \(2, 3\); got torch.float32 \(100, 3\)"):
        pycute.kernels.scaled_gemm(a, b, sa.T.contiguous(), sb, "block", 1)


def test_a_promoted_accumulator_past_the_register_budget_is_refused():
    with pytest.raises(pc.PlanError, match=r"promoting a 128 x 128 accumulator per warpgroup doubles its 128 "
                                           r"registers per thread past the budget"):
        HopperGemm(dtype="e4m3", BN=128, m_blocks=2, mode="pingpong", scales="block", promote=1)
    with pytest.raises(pc.PlanError, match=r"scales='tensor' scale fp8 operands, not bf16"):
        HopperGemm(scales="tensor")
