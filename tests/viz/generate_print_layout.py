"""Generate ``print_layout_cute.json``: CuTe C++'s own ``print_layout`` output for a set of layouts, the reference
pycute's text grids must equal character for character. Not run in CI; needs g++, the CuTe headers of NVIDIA's
``nvidia-cutlass`` wheel and the CUDA runtime/libcu++ headers (see ``tests/parity/generate_cpp.py``):

    python tests/viz/generate_print_layout.py /tmp/nvc/x/cutlass_library/source/include \\
        /usr/local/cuda/include /usr/local/cuda/include/cccl

Shapes and strides are dynamic ints so CuTe prints ``4`` rather than ``_4``, as pycute does.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "print_layout_cute.json"

# (shape, stride, swizzle (B, M, S) or None, offset)
CASES = [
    ((4, 8), (1, 4), None, 0),
    ((4, 8), (8, 1), None, 0),
    (((2, 2), (2, 4)), ((1, 8), (2, 16)), None, 0),
    (((2, 4), (2, 2)), ((8, 1), (4, 16)), None, 0),
    ((3, 2), (0, 1), None, 0),
    ((8, 16), (16, 1), None, 0),
    ((4, 3), (1, -4), None, 0),
    ((1, 5), (7, 3), None, 0),
    ((4, 8), (8, 1), (2, 1, 3), 0),
    ((8, 16), (16, 1), (3, 1, 3), 0),
    ((8, 8), (8, 1), (1, 2, 3), 4),
]


def cxx(t):
    if isinstance(t, tuple):
        return "make_shape(" + ",".join(cxx(e) for e in t) + ")"
    return f"int({t})"


def statement(shape, stride, swizzle, offset):
    layout = f"make_layout({cxx(shape)}, {cxx(stride)})"
    if swizzle is not None:
        b, m, s = swizzle
        layout = f"make_composed_layout(Swizzle<{b},{m},{s}>{{}}, int({offset}), {layout})"
    return f'print_layout({layout}); printf("@@\\n");'


def main(include):
    src = ["#include <cstdio>", "#include <cute/tensor.hpp>", "#include <cute/util/print_tensor.hpp>",
           "using namespace cute;", "int main() {"] + [statement(*c) for c in CASES] + ["}"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "grids.cpp"
        path.write_text("\n".join(src) + "\n")
        subprocess.run(["g++", "-std=c++17", "-w", *(f"-I{d}" for d in include), str(path), "-o", f"{tmp}/grids"],
                       check=True)
        out = subprocess.run([f"{tmp}/grids"], capture_output=True, text=True, check=True).stdout
    grids = out.split("@@\n")[:-1]
    rows = [{"shape": c[0], "stride": c[1], "swizzle": c[2], "offset": c[3], "grid": g} for c, g in zip(CASES, grids)]
    OUT.write_text(json.dumps({"source": "CuTe C++ print_layout (nvidia-cutlass 4.2.0.0 headers, g++)",
                               "cases": rows}, indent=1))
    print(f"{OUT.name}: {len(rows)} grids")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
