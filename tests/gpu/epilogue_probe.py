"""Run epilogue cases on the GPU in this (child) process and print one JSON verdict (a faulting case kills only
this process's CUDA context):

    python -m tests.gpu.epilogue_probe roundtrip NAME      # registers -> shared -> TMA store -> global, and back
    python -m tests.gpu.epilogue_probe convert             # every packing conversion against the models
    python -m tests.gpu.epilogue_probe bank NAME...        # one kernel per plan that only does its shared accesses
                                                           # (what python -m tools epilogue profiles with ncu)

NAME is a case (``<fragment>-<type>-<order>-<swizzle>``, any kind, type, order and swizzle of
tests/copy/smem_ldst/cases.py: ``ROUNDTRIPS`` is the default matrix); for ``bank``, ``st:NAME`` or ``ld:NAME``, and
``st:NAME@FORM`` for the plan with that form pinned (``make_smem_copy(..., form=FORM)``)."""
from __future__ import annotations

import json
import sys

import numpy as np

import pycute as pc
from pycute import Layout
from pycute.copy.smem_ldst import make_epilogue, make_smem_copy
from pycute.harness.epilogue import ConversionProbe, EpilogueRoundTrip

from tests.copy.smem_ldst.cases import DTYPES, FRAGMENTS, cases, fragment, tile

#: Every fragment kind x output type x order x swizzle whose tile TMA can store (all of tests/copy/smem_ldst).
ROUNDTRIPS = cases()


def array_of(kind: str, dt: str, order: str) -> pc.GlobalTensor:
    """Twice the tile in each mode, in the tile's order (a column-major tile goes to a column-major array)."""
    rows, cols = (2 * n for n in FRAGMENTS[kind][1])
    layout = Layout((rows, cols), (cols, 1)) if order == "row" else Layout((rows, cols), (1, rows))
    return pc.make_global_tensor(DTYPES[dt], layout)


def parse_case(name: str) -> tuple[str, str, str, str]:
    """``(kind, dtype, order, swizzle)`` of ``<fragment>-<type>-<order>-<swizzle>``."""
    kind, dt, order, sw = name.split("-", 3)
    if kind not in FRAGMENTS or dt not in DTYPES or order not in ("row", "col"):
        raise ValueError(f"{name!r} is no case: <{'|'.join(FRAGMENTS)}>-<{'|'.join(DTYPES)}>-<row|col>-<swizzle>")
    return kind, dt, order, sw


def roundtrip(name: str) -> EpilogueRoundTrip:
    kind, dt, order, sw = parse_case(name)
    t = tile(kind, dt, order, sw)
    epilogue = make_epilogue(fragment(kind), t, array_of(kind, dt, order))
    load = make_smem_copy(fragment(kind, DTYPES[dt]), t)
    return EpilogueRoundTrip(epilogue, load, FRAGMENTS[kind][1])


def first_difference(got: np.ndarray, want: np.ndarray) -> dict | None:
    """None when equal, else the count and the first few differing positions with both values."""
    if np.array_equal(got, want):
        return None
    bad = np.argwhere(got != want)
    return {"differ": int(len(bad)), "first": [{"at": [int(i) for i in b], "got": int(got[tuple(b)]),
                                                "want": int(want[tuple(b)])} for b in bad[:4]]}


def run_roundtrip(name: str) -> dict:
    from pycute.compile import runtime
    rt = roundtrip(name)
    result = rt.run(runtime.Gpu())
    return {"section": "roundtrip", "case": name, "store": repr(rt.epilogue.store), "load": repr(rt.load),
            "tma": repr(rt.epilogue.tma), **{k: first_difference(*v) for k, v in result.items()}}


def run_convert() -> dict:
    from pycute.compile import runtime
    return {"section": "convert", "forms": ConversionProbe().run(runtime.Gpu())}


def bank_plan(spec: str):
    """``st:NAME`` (the case's store, converting) or ``ld:NAME`` (the load of the same tile); ``@FORM`` pins the
    form."""
    op, name = spec.split(":", 1)
    name, _, form = name.partition("@")
    kind, dt, order, sw = parse_case(name)
    t = tile(kind, dt, order, sw)
    if op == "st":
        return make_smem_copy(t, fragment(kind), form=form or None)
    return make_smem_copy(fragment(kind, DTYPES[dt]), t, form=form or None)


def bank_source(specs: list[str]) -> str:
    """One kernel ``bank_<k>`` per plan: its fragment from global memory, the plan's shared accesses, nothing
    else in shared memory (a load's registers go to global memory so that none is dead)."""
    parts = []
    for k, spec in enumerate(specs):
        plan = bank_plan(spec)
        kind = "float" if plan.fragment.dtype.name == "f32" else "unsigned"
        n = plan.values * plan.fragment.dtype.bits // 32
        body = (f"  for (unsigned i = 0; i < {n}u; ++i) v[i] = io[i * {plan.threads}u + threadIdx.x];\n"
                f"  copy_{k}(base, threadIdx.x, v);" if plan.op == "st" else
                f"  copy_{k}(base, threadIdx.x, v);\n"
                f"  for (unsigned i = 0; i < {n}u; ++i) io[i * {plan.threads}u + threadIdx.x] = v[i];")
        parts.append(plan.cuda(f"copy_{k}") + f"""
extern "C" __global__ void bank_{k}({kind}* io) {{
  extern __shared__ unsigned char raw[];
  const unsigned base = (pycute_smem_address(raw) + {plan.smem.base_align - 1}u) & ~{plan.smem.base_align - 1}u;
  {kind} v[{n}];
{body}
}}
""")
    return '#include "pycute/common.cuh"\n' + "\n".join(parts)


def run_bank(specs: list[str]) -> dict:
    """Launch every plan's kernel once (one CTA); the predictions ncu's counts are compared with."""
    from pycute.compile import runtime
    from pycute.compile.nvrtc import compile_cuda
    from pycute.tensor.values import smem_bytes_needed
    gpu = runtime.Gpu()
    code = compile_cuda(bank_source(specs), arch="sm_90a")
    rows = []
    for k, spec in enumerate(specs):
        plan = bank_plan(spec)
        io = gpu.upload(np.zeros(plan.values * plan.threads, dtype=np.uint32))
        gpu.launch(gpu.kernel(code, f"bank_{k}"), io, grid=1, block=plan.threads,
                   dynamic_smem=smem_bytes_needed(plan.smem) + plan.smem.base_align)
        counts: dict[str, int] = {}
        for m in plan.moves:
            counts[m.atom.sass] = counts.get(m.atom.sass, 0) + plan.warps
        rows.append({"kernel": f"bank_{k}", "plan": spec, "instructions": counts, "wavefronts": plan.wavefronts,
                     "ideal": plan.ideal_wavefronts, "repr": repr(plan)})
    return {"section": "bank-launch", "kernels": rows}


if __name__ == "__main__":
    what = sys.argv[1]
    out = (run_roundtrip(sys.argv[2]) if what == "roundtrip" else run_convert() if what == "convert"
           else run_bank(sys.argv[2:]))
    print(json.dumps(out))
