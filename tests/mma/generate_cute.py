"""Generate ``tests/mma/cute_umma.json``: CuTe C++'s own answers for MMA operand descriptors (``UMMA::make_umma_desc``
on ``tile_to_shape`` of CuTe's canonical atoms, and the k-block advance of its ``smem_desc`` descriptor tensors) and
instruction descriptors (``UMMA::make_instr_desc`` / ``make_instr_desc_block_scaled``).

The CuTe headers are header-only and run on a host compiler; they ship in NVIDIA's ``nvidia-cutlass`` wheel (under
NVIDIA's licence: download and unpack it apart, never install it beside pycute) and include the CUDA runtime API
headers of a toolkit:

    pip download nvidia-cutlass==4.2.0.0 --no-deps -d /tmp/nvc && unzip -q /tmp/nvc/*.whl -d /tmp/nvc/x
    python tests/mma/generate_cute.py /tmp/nvc/x/cutlass_library/source/include /usr/local/cuda/include \
        /usr/local/cuda/include/cccl

On the host ``cast_smem_ptr_to_uint`` is device-only, so CuTe's start-address field is 0; LBO, SBO, the layout type
and the k-block advance are exact. Each case is one C++ block printing one JSON line; nothing of CuTe's code is
copied, only its printed answers are recorded. Not run in CI (the headers are not a dependency).
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "cute_umma.json"
VERSION = "CuTe C++ headers of nvidia-cutlass 4.2.0.0, g++ -std=c++17 on the host"

# pycute dtype name -> (CuTe type, bits)
TYPES = {"u8": ("uint8_t", 8), "bf16": ("cute::bfloat16_t", 16), "f16": ("cute::half_t", 16),
         "tf32": ("cute::tfloat32_t", 32)}
K_ATOMS = ("K_INTER", "K_SW32", "K_SW64", "K_SW128")
MN_ATOMS = ("MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128")


def atom_extent(atom: str, bits: int) -> tuple[int, int]:
    """(MN, K) of one of CuTe's canonical atoms in elements (16 B x 8 rows, widened by the swizzle)."""
    width = {"INTER": 16, "SW32": 32, "SW64": 64, "SW128": 128, "SW128_32B": 128}[atom.split("_", 1)[1]]
    rows = 4 if atom.endswith("32B") else 8
    along = width * 8 // bits
    return (8, along) if atom.startswith("K_") else (along, rows)


def operand_cases():
    cases = []
    for name, (_, bits) in TYPES.items():
        kmma = 256 // bits
        atoms = [a for a in K_ATOMS + MN_ATOMS if not (a.startswith("MN") and bits == 32)]
        atoms += ["MN_SW128_32B"] if bits == 32 else []
        atoms += ["MN_SW128"] if bits == 32 else []            # CuTe answers it; PTX forbids tf32 transpose there
        for atom, mn, kmul, order in itertools.product(atoms, (64, 128, 256), (1, 2), ("col", "row")):
            amn, ak = atom_extent(atom, bits)
            k = max(ak, kmma) * kmul
            if mn % amn or k % ak or k % kmma:
                continue
            cases.append({"op": "umma_desc", "dtype": name, "atom": atom, "mn": mn, "k": k, "order": order,
                          "major": "K" if atom.startswith("K_") else "MN", "k_per_mma": kmma})
    return cases


def operand_statement(i: int, c: dict) -> str:
    ctype = TYPES[c["dtype"]][0]
    step = "cute::Step<cute::_1,cute::_2>" if c["order"] == "col" else "cute::Step<cute::_2,cute::_1>"
    major = "cute::UMMA::Major::" + c["major"]
    return f"""  {{
    using T = {ctype};
    auto sL = cute::tile_to_shape(cute::UMMA::Layout_{c['atom']}_Atom<T>{{}},
                                  cute::make_shape(cute::Int<{c['mn']}>{{}}, cute::Int<{c['k']}>{{}}), {step}{{}});
    auto t = cute::make_tensor(cute::make_smem_ptr(static_cast<T*>(nullptr)), sL);
    auto blocks = cute::zipped_divide(t, cute::make_shape(cute::Int<{c['mn']}>{{}}, cute::Int<{c['k_per_mma']}>{{}}));
    auto d = cute::make_tensor<cute::UMMA::smem_desc<{major}>>(blocks);
    std::printf("{{\\"case\\": {i}, \\"desc\\": %llu, \\"k_units\\": [", (unsigned long long)(*d.data()).desc_);
    for (int j = 0; j < int(cute::size<1,1>(blocks)); ++j)
      std::printf("%s%d", j ? ", " : "", int(d.layout()(0, cute::make_coord(0, j))));
    std::printf("], \\"layout\\": \\"");
    cute::print(sL.layout_b());
    std::printf("\\", \\"swizzle\\": \\"");
    cute::print(sL.layout_a());
    std::printf("\\"}}\\n");
  }}"""


# kind -> (CuTe A/B types by pycute name, D types, block-scale SF types)
IDESC_KINDS = {
    "f16": ({"f16": "cute::half_t", "bf16": "cute::bfloat16_t"}, {"f32": "float", "f16": "cute::half_t"}, None),
    "tf32": ({"tf32": "cute::tfloat32_t"}, {"f32": "float"}, None),
    "f8f6f4": ({"f8e4m3": "cute::float_e4m3_t", "f8e5m2": "cute::float_e5m2_t", "f6e2m3": "cute::float_e2m3_t",
                "f6e3m2": "cute::float_e3m2_t", "f4e2m1": "cute::detail::float_e2m1_unpacksmem_t"},
               {"f32": "float", "f16": "cute::half_t"}, None),
    "i8": ({"i8": "int8_t", "u8": "uint8_t"}, {"i32": "int32_t"}, None),
    "mxf8f6f4": ({"f8e4m3": "cute::float_e4m3_t", "f8e5m2": "cute::float_e5m2_t",
                  "f4e2m1": "cute::detail::float_e2m1_unpacksmem_t"}, {"f32": "float"},
                 {"ue8m0": "cute::float_ue8m0_t"}),
    "mxf4nvf4": ({"f4e2m1": "cute::float_e2m1_t"}, {"f32": "float"},
                 {"ue8m0": "cute::float_ue8m0_t", "ue4m3": "cute::float_ue4m3_t"}),
}


def idesc_cases():
    cases = []
    for kind, (ab, ds, sfs) in IDESC_KINDS.items():
        for (a, b), d, (m, n), majors in itertools.product(
                [(x, x) for x in ab] + [(x, y) for x, y in itertools.product(ab, ab) if x < y][:3], ds,
                ((64, 64), (128, 256), (128, 8), (256, 128), (128, 144)), (("K", "K"), ("K", "MN"), ("MN", "K"))):
            transposable = {"f16", "bf16", "tf32", "f8e4m3", "f8e5m2", "i8", "u8"}
            if "MN" in majors and not ({a, b} <= transposable) or (sfs and m == 64):
                continue
            for sf in (sfs or {None: None}):
                for neg in ((False, False), (True, False)) if kind != "i8" else ((False, False),):
                    cases.append({"op": "instr_desc", "kind": kind, "a": a, "b": b, "d": d, "m": m, "n": n,
                                  "a_major": majors[0], "b_major": majors[1], "negate_a": neg[0],
                                  "negate_b": neg[1], "scale_type": sf})
    return cases


def idesc_statement(i: int, c: dict) -> str:
    ab, ds, sfs = IDESC_KINDS[c["kind"]]
    majors = ", ".join(f"cute::UMMA::Major::{x}" for x in (c["a_major"], c["b_major"]))
    neg = ", ".join("cute::UMMA::ScaleIn::" + ("Neg" if x else "One") for x in (c["negate_a"], c["negate_b"]))
    if c["scale_type"] is None:
        call = (f"cute::UMMA::make_instr_desc<{ab[c['a']]}, {ab[c['b']]}, {ds[c['d']]}, {c['m']}, {c['n']}, {majors}, "
                f"{neg}>()")
    else:
        call = (f"cute::UMMA::make_instr_desc_block_scaled<{ab[c['a']]}, {ab[c['b']]}, {ds[c['d']]}, "
                f"{sfs[c['scale_type']]}, {c['m']}, {c['n']}, {majors}, {neg}>()")
    return f'  std::printf("{{\\"case\\": {i}, \\"idesc\\": %u}}\\n", uint32_t({call}));'


def main(*includes: str) -> None:
    cases = operand_cases() + idesc_cases()
    body = "\n".join(operand_statement(i, c) if c["op"] == "umma_desc" else idesc_statement(i, c)
                     for i, c in enumerate(cases))
    source = f"""#include <cstdio>
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
int main() {{
{body}
}}
"""
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "gen.cpp", Path(tmp) / "gen"
        src.write_text(source)
        subprocess.run(["g++", "-std=c++17", "-O0", "-w", *(f"-I{d}" for d in includes), str(src), "-o", str(exe)],
                       check=True)
        lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    answers = {}
    for line in lines:
        if line.startswith("{"):
            rec = json.loads(line)
            answers[rec.pop("case")] = rec
    for i, c in enumerate(cases):
        c.update(answers[i])
    OUT.write_text(json.dumps({"generator": VERSION, "cases": cases}, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main(*sys.argv[1:])
