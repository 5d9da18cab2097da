"""The float probe the H200 runs (python -m tools interpreter_floats) compiles for sm_90a and runs on the CPU; its operands cover
NaNs, infinities, subnormals and the special values, and a few of its rows equal numpy's IEEE float32."""
import numpy as np

from pycute.harness.float_probe import EXACT_OPS, FloatProbe, ulp_distance


def test_the_probe_runs_on_the_cpu_and_its_rows_are_ieee_where_numpy_is():
    probe = FloatProbe(n=256)
    rows = probe.run_cpu()
    x = probe.operands().view(np.float32)
    names = [name for name, *_ in probe.ops]
    with np.errstate(all="ignore"):
        for name, value in (("add.rn.f32", x[0] + x[1]), ("mul.rn.f32", x[0] * x[1]), ("sub.rn.f32", x[0] - x[1])):
            want = np.where(np.isnan(value), np.uint32(0x7FFFFFFF), value.view(np.uint32))
            assert np.array_equal(rows[names.index(name)], want), name
    assert len(rows) == len(probe.ops) and len(EXACT_OPS) < len(probe.ops)


def test_the_operands_hold_every_kind_of_value():
    x = FloatProbe(n=512).operands().view(np.float32)
    assert np.isnan(x).any() and np.isinf(x).any() and ((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)).any()


def test_ulp_distance_counts_representable_steps_and_meets_at_zero():
    a = np.array([0x3F800000, 0x00000000, 0x7FC00000, 0x7FC00000], dtype=np.uint32)
    b = np.array([0x3F800001, 0x80000000, 0x7FFFFFFF, 0x3F800000], dtype=np.uint32)
    assert list(ulp_distance(a, b)) == [1, 0, 0, 1 << 31]


def test_values_are_the_same_when_equal_or_nan_in_both_lane_by_lane():
    from pycute.harness.float_probe import same_values
    a = np.array([0x7FC00000, 0x3F800000, 1], dtype=np.uint32)
    b = np.array([0x7FFFFFFF, 0x3F800000, 2], dtype=np.uint32)
    assert list(same_values(a, b, "f32")) == [True, True, False]
    assert list(same_values(np.array([0x7FFF3C00], dtype=np.uint32), np.array([0x7E013C00], dtype=np.uint32),
                            "f16x2")) == [True]
    assert list(same_values(np.array([0x7FFF3C00], dtype=np.uint32), np.array([0x7E013C01], dtype=np.uint32),
                            "f16x2")) == [False]
