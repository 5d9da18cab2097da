"""Every tcgen05.mma form the header wraps (kind x cta_group x scale_vec x A in shared memory or TMEM x .ws) assembles
for sm_100a to its MMA instruction, once per call, and the PTX interpreter reads each call back as the issue its
arguments name. (ptxas refuses a function that mixes cta_group::1 and ::2: one kernel per cta_group.)"""
import pytest

from pycute.codegen.mma import _forms, mma_helper
from pycute.compile.nvrtc import compile_cuda
from pycute.errors import CompileError
from pycute.interp.stream import trace_entry

FORMS = list(_forms())
SASS = {"f16": "UTCHMMA", "tf32": "UTCHMMA", "f8f6f4": "UTCQMMA", "i8": "UTCIMMA", "mxf8f6f4": "UTCQMMA",
        "mxf4": "UTCOMMA", "mxf4nvf4": "UTCOMMA"}


def call(form, i):
    kind, group, vec, a_tmem, ws = form
    a = f"{0x100 + i}u" if a_tmem else f"{0x4000 + i}ull"
    sf = ", 0x120u, 0x140u" if vec else ""
    return f"  {mma_helper(kind, group, vec, a_tmem, ws)}(0x10u, {a}, 0x8000ull, 0x08100010u{sf}, 1u);"


def kernel(group):
    body = "\n".join(call(f, i) for i, f in enumerate(FORMS) if f[1] == group)
    return (f'extern "C" __global__ void __cluster_dims__(2, 1, 1) forms_cg{group}() {{\n'
            f"  if (threadIdx.x == 0) {{\n{body}\n  }}\n}}\n")


def test_one_kernel_may_not_mix_cta_groups():
    one, two = (next(f for f in FORMS if f[1] == g) for g in (1, 2))
    mixed = f'extern "C" __global__ void __cluster_dims__(2, 1, 1) mixed() {{\n{call(one, 0)}\n{call(two, 1)}\n}}\n'
    with pytest.raises(CompileError, match="single CTA.*and CTA pair granularity"):
        compile_cuda('#include "pycute/sm100.cuh"\n' + mixed, arch="sm_100a")


@pytest.fixture(scope="module")
def compiled():
    return compile_cuda('#include "pycute/sm100.cuh"\n' + kernel(1) + kernel(2), arch="sm_100a")


def test_every_form_assembles_to_its_mma(compiled):
    h = compiled.histogram()
    for family in set(SASS.values()):
        want = sum(1 for kind, *_ in FORMS if SASS[kind] == family)
        assert sum(v for op, v in h.items() if op.startswith(family)) == want, family
    assert sum(v for op, v in h.items() if ".2CTA" in op and "MMA" in op) == sum(1 for f in FORMS if f[1] == 2)


def test_the_interpreter_reads_every_call_back(compiled):
    for group in (1, 2):
        issues = trace_entry(compiled.ptx, {}, {}, f"forms_cg{group}", specials={"%cluster_nctarank": 2}).mma
        forms = [(k, f) for k, f in enumerate(FORMS) if f[1] == group]
        assert [(i.a_tmem, i.a_desc, i.sfa) for i in issues] == \
            [(f[3], (0x100 if f[3] else 0x4000) + k, 0x120 if f[2] else None) for k, f in forms]
        assert all(i.ptx.startswith(f"tcgen05.mma{'.ws' if f[4] else ''}.cta_group::{f[1]}.kind::{f[0]}")
                   for i, (_, f) in zip(issues, forms))
