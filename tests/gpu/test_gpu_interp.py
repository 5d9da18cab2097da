"""The CPU interpreter's exact floating-point instructions give the GPU's bits: every instruction of
``pycute.harness.float_probe`` that the ISA pins (every rounding mode of add / sub / mul / fma / div / sqrt / rcp,
.ftz, .sat, min / max, conversions between f32, f16, bf16, tf32, e4m3, e5m2 and integers) on the same operand bit
patterns (NaNs, infinities and subnormals among them), any NaN equal to any NaN (PTX leaves their payloads
unspecified; ``python -m tools interpreter_floats`` records the payload differences). The .approx ones are recorded,
not asserted (the same question). Needs a CUDA GPU of compute capability 9.0 or newer; skipped elsewhere."""
import numpy as np
import pytest

from pycute.compile import runtime
from pycute.harness.float_probe import EXACT_OPS, FloatProbe, same_values

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "needs a CUDA GPU of compute capability 9.0+"


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_the_exact_float_instructions_give_the_gpus_bits():
    probe = FloatProbe(ops=EXACT_OPS, n=4096)
    gpu, cpu = probe.run_gpu(runtime.Gpu()), probe.run_cpu()
    differ = {name: int((~same_values(gpu[k], cpu[k], fmt)).sum()) for k, (name, _, _, fmt, _) in enumerate(EXACT_OPS)
              if not same_values(gpu[k], cpu[k], fmt).all()}
    assert not differ, differ
