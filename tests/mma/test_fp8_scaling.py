"""FP8 scaling plans (pycute.mma.fp8_scaling): the scales' shapes and where they apply, the float64 reference, and
the kernel's arithmetic modelled: with the tensor core's adder narrower than f32 (Hopper's fp8 adder as the H100 run
measured it, ``arch.sm90.wgmma.FP8_F32``), an unpromoted kernel's error grows with K while a promoted one's stays
flat, for every kind of scale; with an exact adder the promoted arithmetic is the reference to f32 rounding."""
import numpy as np
import pytest

import pycute as pc
from pycute.arch.sm90.wgmma import FP8_F32
from pycute.mma.fp8_scaling import K_STEP, make_fp8_scaling
from pycute.sim.accumulate import dot_sum

KINDS = ["tensor", "row", "col", "rowcol", "block"]


def e4m3(rng, shape):
    """Random normal e4m3 values (3 mantissa bits, exponents -4..4)."""
    return rng.choice([-1.0, 1.0], shape) * (1 + rng.integers(0, 8, shape) / 8) * 2.0 ** rng.integers(-4, 5, shape)


def scales(plan, rng, m, n, k):
    return rng.uniform(0.25, 4, plan.a_scales(m, k)), rng.uniform(0.25, 4, plan.b_scales(n, k))


def measured_adder(a, b, c):
    """One k-step through Hopper's fp8 adder as measured (``FP8_F32``: the 32 products and C aligned to the largest
    exponent keeping 13 bits below it, cut toward zero, the sum cut to 13 bits below its own leading bit)."""
    return dot_sum(a[:, None, :], b[None, :, :], c, "f8e4m3", "f8e4m3", "f32", FP8_F32)


def test_the_scales_shapes_follow_their_kind():
    m, n, k = 100, 300, 1000
    shapes = {kind: (make_fp8_scaling(kind, (128, 128)).a_scales(m, k), make_fp8_scaling(kind, (128, 128)).b_scales(
        n, k)) for kind in KINDS}
    assert shapes == {"tensor": ((1,), (1,)), "row": ((100,), (1,)), "col": ((1,), (300,)),
                      "rowcol": ((100,), (300,)), "block": ((8, 100), (3, 8))}
    assert make_fp8_scaling("block", (128, 128)).a_scales(98, 128) == (1, 100)     # M padded to 16-byte rows


@pytest.mark.parametrize("kind", KINDS)
def test_the_reference_is_the_scaled_sum_element_by_element(kind):
    rng = np.random.default_rng(1)
    m, n, k = 5, 3, 300
    plan = make_fp8_scaling(kind, (64, 64))
    a, b = e4m3(rng, (m, k)), e4m3(rng, (n, k))
    sa, sb = scales(plan, rng, m, n, k)
    fa, fb = plan.scale_matrices(sa, sb, m, n, k)
    want = np.array([[sum(a[i, j] * fa[i, j // 128] * b[c, j] * fb[c, j // 128] for j in range(k)) for c in range(n)]
                     for i in range(m)])
    assert np.allclose(plan.reference(a, b, sa, sb), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_an_exact_adder_promoted_gives_the_reference_to_f32_rounding(kind):
    rng = np.random.default_rng(2)
    m, n, k = 64, 32, 1000
    plan = make_fp8_scaling(kind, (64, 32))
    a, b = e4m3(rng, (m, k)), e4m3(rng, (n, k))
    sa, sb = scales(plan, rng, m, n, k)
    ref = plan.reference(a, b, sa, sb)
    assert np.linalg.norm(plan.emulate(a, b, sa, sb) - ref) / np.linalg.norm(ref) < 1e-6


@pytest.mark.parametrize("kind", KINDS)
def test_promotion_keeps_the_error_flat_in_k_and_without_it_the_error_grows(kind):
    rng = np.random.default_rng(3)
    errors = {}
    for k in (512, 8192):
        a, b = e4m3(rng, (64, k)), e4m3(rng, (32, k))
        for interval in (1, None) if kind != "block" else (1,):
            plan = make_fp8_scaling(kind, (64, 32), interval=interval)
            sa, sb = scales(plan, rng, 64, 32, k)
            ref = plan.reference(a, b, sa, sb)
            err = plan.emulate(a, b, sa, sb, measured_adder) - ref
            errors[k, interval] = np.linalg.norm(err) / np.linalg.norm(ref)
    assert errors[8192, 1] < 1.3 * errors[512, 1]
    if kind != "block":
        assert errors[8192, None] > 3 * errors[512, None] and errors[8192, None] > 5 * errors[8192, 1]


def test_the_plan_states_its_interval_registers_and_where_scales_apply():
    block = make_fp8_scaling("block", (128, 128))
    assert (block.steps, block.applied, block.registers(64), block.promotions(33)) == (128 // K_STEP, "promotion",
                                                                                        128 + 4 + 1, 33)
    tensor = make_fp8_scaling("tensor", (128, 256), interval=4)
    assert (tensor.steps, tensor.applied, tensor.registers(128), tensor.promotions(33)) == (16, "epilogue", 256, 9)
    assert make_fp8_scaling("tensor", (128, 256), interval=None).registers(128) == 128
    assert "every 1 k-block(s) of 128 (4 wgmma k-steps)" in block.explain()


@pytest.mark.parametrize("build, message", [
    (lambda: make_fp8_scaling("block", (128, 128), interval=2), r"promote every k-block of 128 \(interval=1"),
    (lambda: make_fp8_scaling("block", (128, 192)), r"BN=192 with 128 x 128 B scales"),
    (lambda: make_fp8_scaling("channel", (128, 128)), r"kind='channel'"),
    (lambda: make_fp8_scaling("tensor", (96, 128)), r"BM a multiple of 64"),
    (lambda: make_fp8_scaling("tensor", (128, 128), interval=0), r"interval=0: at least one k-block"),
    (lambda: make_fp8_scaling("row", (64, 64)).reference(np.ones((4, 128)), np.ones((2, 128)), np.ones(3),
                                                         np.ones(1)), r"A's are \(4,\) and B's \(1,\), got \(3,\)"),
])
def test_bad_scaling_input_is_refused(build, message):
    with pytest.raises(pc.PlanError, match=message):
        build()


# ---- the generated code: each register's scales, interpreted -----------------------------------------------------

PROBE = r"""
extern "C" __global__ void __launch_bounds__(128) probe(const float* sa, const float* sb, float* out, unsigned m,
                                                         unsigned n) {
  float acc[fp8s_registers], part[fp8s_registers];
  for (unsigned v = 0; v < fp8s_registers; ++v) { acc[v] = 1.0f; part[v] = 1.0f; }
  BODY
  for (unsigned v = 0; v < fp8s_registers; ++v) out[threadIdx.x * fp8s_registers + v] = acc[v];
}
"""


@pytest.mark.parametrize("kind, bn", [("block", 128), ("block", 256), ("rowcol", 64), ("col", 128)])
def test_each_register_gets_the_scales_of_its_row_and_column(kind, bn):
    from pycute.arch.sm90.wgmma import warpgroup_fragment
    from pycute.compile import compile_cuda
    from pycute.interp import run_kernel
    plan = make_fp8_scaling(kind, (128, bn))
    m, n, kb, row0, col0 = 200, 2 * bn, 3, 64, bn          # the second 64-row block, the second tile of columns
    if kind == "block":
        body = "fp8s_promote(acc, part, sa, sb, 2u, 64u, %du, threadIdx.x, m, n, 3u);" % col0
        sa = np.zeros(kb * m, np.float32)
        sa.reshape(kb, m)[2] = np.arange(m) + 1                        # k-block 2: row + 1
        sb = np.zeros(-(-n // 128) * kb, np.float32)
        sb.reshape(-1, kb)[:, 2] = 1000 * (np.arange(-(-n // 128)) + 1)  # k-block 2: 1000 x (column block + 1)
    else:
        body = "fp8s_scale(acc, sa, sb, 0.5f, 64u, %du, threadIdx.x, m, n);" % col0
        sa, sb = np.arange(m, dtype=np.float32) + 1, 1000 * (np.arange(n, dtype=np.float32) + 1)
    src = '#include "pycute/common.cuh"\n' + plan.cuda() + PROBE.replace("BODY", body)
    out = np.zeros(128 * bn // 2, np.float32)
    run_kernel(compile_cuda(src, arch="sm_90a"), "probe", block=128, args=dict(sa=sa, sb=sb, out=out, m=m, n=n))
    frag = warpgroup_fragment(64, bn, 2)
    idx = np.array([[frag(t, v) for v in range(bn // 2)] for t in range(128)])
    row, col = row0 + idx % 64, col0 + idx // 64
    if kind == "block":
        want = 1 + (row + 1) * 1000 * (col // 128 + 1)                  # acc + part x sa x sb
    elif kind == "rowcol":
        want = 0.5 * (row + 1) * 1000 * (col + 1)
    else:
        want = 0.5 * 1.0 * 1000 * (col + 1)
    assert np.array_equal(out.reshape(128, -1), want.astype(np.float32))
