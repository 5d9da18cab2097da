"""Generate the parity data the CuTe DSL cannot give: CuTe C++'s own answers for ``crd2crd``, ``upcast`` and
``downcast``, written to ``tests/parity/cpp_*.json`` in the format of ``generate.py``.

It also records CuTe's mode vocabulary (``append``, ``prepend``, ``group``, ``take``, ``select``, ``get``,
``make_layout(shape, LayoutRight{})`` and ``make_identity_layout``) for ``cpp_<op>.json``.

The CuTe headers are header-only and run on a host compiler. They ship in NVIDIA's ``nvidia-cutlass`` wheel (under
NVIDIA's licence, so neither installed nor vendored here: download and unpack it apart), and include the CUDA runtime
API and libcu++ headers (from a CUDA toolkit, or PyPI's ``nvidia-cuda-runtime``/``nvidia-cuda-cccl`` wheels):

    pip download nvidia-cutlass==4.2.0.0 --no-deps -d /tmp/nvc && unzip -q /tmp/nvc/*.whl -d /tmp/nvc/x
    python tests/parity/generate_cpp.py /tmp/nvc/x/cutlass_library/source/include \\
        /usr/local/cuda/include /usr/local/cuda/include/cccl

Each case is one C++ statement printing CuTe's answer. Shapes and strides are static (``Int<N>``), as the DSL's
Python ints are, so the upcast takes CuTe's static path. A case CuTe rejects at compile time (a ``static_assert``)
is recorded as ``{"error": ...}``: the generator compiles, finds the failing statements in g++'s diagnostics, and
compiles again without them. Only CuTe's answers are recorded; nothing of its code is copied.
"""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent
SEED = 20261201
VERSION = "CuTe C++ headers of nvidia-cutlass 4.2.0.0, g++ -std=c++17 on the host"


# -- random inputs ------------------------------------------------------------------------------------------------
def rand_shape(rng, rank=None, depth=2):
    rank = rng.choice([1, 1, 2, 2, 3]) if rank is None else rank
    modes = [rand_shape(rng, None, depth - 1) if depth > 1 and rng.random() < 0.25 else rng.choice([1, 2, 3, 4, 6, 8])
             for _ in range(rank)]
    return modes[0] if rank == 1 and rng.random() < 0.5 else tuple(modes)


def leaves(t):
    return [x for e in t for x in leaves(e)] if type(t) is tuple else [t]


def like(t, values):
    it = iter(values)

    def go(x):
        return tuple(go(e) for e in x) if type(x) is tuple else next(it)
    return go(t)


def size(t):
    n = 1
    for x in leaves(t):
        n *= x
    return n


def rand_crd(rng, shape):
    """A coordinate of ``shape``: an index, a natural (hierarchical) coordinate, or one flattened per mode."""
    kind = rng.random()
    if kind < 0.3 or type(shape) is not tuple:
        return rng.randrange(size(shape))
    if kind < 0.7:
        return like(shape, [rng.randrange(s) for s in leaves(shape)])
    return tuple(rng.randrange(size(m)) for m in shape)


def same_size_shape(rng, shape):
    """Another shape of the same size: the same modes regrouped, refactored, or congruent per mode."""
    n = size(shape)
    if type(shape) is tuple and rng.random() < 0.5:
        return tuple(same_size_shape(rng, m) if rng.random() < 0.5 else size(m) for m in shape)
    factors = [f for f in (2, 3) for _ in range(16) if n % f ** (_ + 1) == 0]
    rng.shuffle(factors)
    cut = rng.randrange(len(factors) + 1)
    a = 1
    for f in factors[:cut]:
        a *= f
    return rng.choice([n, (a, n // a), (n // a, a)])


def crd2crd_cases(rng, count):
    cases = []
    for _ in range(count):
        src = rand_shape(rng)
        dst = same_size_shape(rng, src)
        cases.append([rand_crd(rng, src), src, dst])
    return cases


def rand_layout(rng):
    shape = rand_shape(rng)
    strides = [rng.choice([0, 1, 1, 2, 3, 4, 6, 8, 16, 32, -1, -2]) for _ in leaves(shape)]
    return shape, like(shape, strides)


def cast_cases(rng, count):
    return [[rng.choice([2, 4, 8]), rand_layout(rng)] for _ in range(count)]


# -- C++ ----------------------------------------------------------------------------------------------------------
def cxx(t, static):
    if type(t) is tuple:
        return "make_tuple(" + ",".join(cxx(e, static) for e in t) + ")"
    return f"Int<{t}>{{}}" if static else f"int({t})"


def cxx_layout(layout):
    shape, stride = layout
    return f"make_layout({cxx(shape, True)}, {cxx(stride, True)})"


def statement(op, args):
    if op == "crd2crd":
        crd, src, dst = args
        return f"print(crd2crd({cxx(crd, False)}, {cxx(src, False)}, {cxx(dst, False)}));"
    if op in VOCABULARY:
        return VOCABULARY[op](args)
    n, layout = args
    return f"print({op}<{n}>({cxx_layout(layout)}));"


# CuTe's mode vocabulary: (layout, b, e) for group / take, (layout, i, j) for select, (a, b) for append / prepend,
# (layout, path) for get, (shape,) for make_layout(shape, LayoutRight{}) and make_identity_layout.
VOCABULARY = {
    "append": lambda a: f"print(append({cxx_layout(a[0])}, {cxx_layout(a[1])}));",
    "prepend": lambda a: f"print(prepend({cxx_layout(a[0])}, {cxx_layout(a[1])}));",
    "group": lambda a: f"print(group<{a[1]},{a[2]}>({cxx_layout(a[0])}));",
    "take": lambda a: f"print(take<{a[1]},{a[2]}>({cxx_layout(a[0])}));",
    "select": lambda a: f"print(select<{','.join(map(str, a[1]))}>({cxx_layout(a[0])}));",
    "get": lambda a: f"print(get<{','.join(map(str, a[1]))}>({cxx_layout(a[0])}));",
    "layout_right": lambda a: f"print(make_layout({cxx(a[0], True)}, LayoutRight{{}}));",
    "make_identity_layout": lambda a: f"print(make_identity_layout({cxx(a[0], True)}));",
}


def vocabulary_cases(rng, count):
    """Random operands of each vocabulary op; ranks of at least 2 for the mode ranges."""
    out = {op: [] for op in VOCABULARY}
    for _ in range(count):
        a, b = rand_layout(rng), rand_layout(rng)
        out["append"].append([a, b])
        out["prepend"].append([b, a])
        shape = tuple(rand_shape(rng, None, 1) for _ in range(rng.choice([2, 3, 4])))
        strides = like(shape, [rng.choice([0, 1, 2, 3, 4, 8]) for _ in leaves(shape)])
        r = len(shape)
        lo = rng.randrange(r)
        hi = rng.randrange(lo + 1, r + 1)
        out["group"].append([(shape, strides), lo, hi])
        out["take"].append([(shape, strides), lo, hi])
        out["select"].append([(shape, strides), rng.sample(range(r), rng.randrange(1, r + 1))])
        nested = rng.randrange(r)
        path = [nested] + ([0] if type(shape[nested]) is tuple else [])
        out["get"].append([(shape, strides), path])
        out["layout_right"].append([rand_shape(rng)])
        out["make_identity_layout"].append([tuple(rng.choice([1, 2, 3, 4, 8]) for _ in range(rng.choice([1, 2, 3])))])
    return out


def compile_and_run(include, statements):
    """{statement index: printed text} for the statements that compile, {index: static assertion} for the rest."""
    failed = {}
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "cases.cpp", Path(tmp) / "cases"
        while True:
            live = [i for i in range(len(statements)) if i not in failed]
            lines = ["#include <cstdio>", "#include <cute/layout.hpp>", "using namespace cute;", "int main() {"]
            first = len(lines) + 1
            lines += [f'  printf("%d ", {i}); {statements[i]} printf("\\n");' for i in live] + ["}"]
            src.write_text("\n".join(lines) + "\n")
            r = subprocess.run(["g++", "-std=c++17", "-O0", *(f"-I{d}" for d in include), str(src), "-o", str(exe)],
                               capture_output=True, text=True)
            if r.returncode == 0:
                break
            found = blame(r.stderr, src.name, first, live)
            if not found:
                sys.exit(f"g++ failed without naming a case:\n{r.stderr[-4000:]}")
            failed.update(found)
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    printed = dict(line.split(" ", 1) for line in out.splitlines())
    return {int(k): v for k, v in printed.items()}, failed


def blame(stderr, name, first, live):
    """The cases whose statements g++'s diagnostics point at, each with the static assertion's message."""
    found, message = {}, "static assertion failed"
    for block in re.split(r"\n(?=In instantiation|In function)", stderr):
        m = re.search(r"static assertion failed: ([^\n]*)", block)
        if m:
            message = m.group(1).strip()
        for line in re.findall(rf"{re.escape(name)}:(\d+):", block):
            k = int(line) - first
            if 0 <= k < len(live):
                found[live[k]] = message
    return found


# -- the answers as data ------------------------------------------------------------------------------------------
def parse(text):
    """CuTe's printout (``(_4,_8):(_1,_4)``, ``(1,(2,0))``, ``7``) as JSON values."""
    def value(t):
        return json.loads(t.replace("_", "").replace("(", "[").replace(")", "]"))
    if "@" in text:                     # scaled-basis strides: CuTe's text, without its static-integer marks
        return {"text": text.replace("_", "")}
    if ":" in text:
        shape, stride = text.split(":")
        return {"L": [value(shape), value(stride)]}
    return value(text)


def enc(x):
    if type(x) is tuple:
        return [enc(e) for e in x]
    return x


def vocabulary_args(op, args):
    if op in ("append", "prepend"):
        return [{"L": [enc(x[0]), enc(x[1])]} for x in args]
    if op in ("layout_right", "make_identity_layout"):
        return [enc(args[0])]
    (shape, stride), *rest = args
    return [{"L": [enc(shape), enc(stride)]}] + [enc(tuple(x)) if isinstance(x, list) else x for x in rest]


def generate(include, op, cases):
    printed, failed = compile_and_run(include, [statement(op, args) for args in cases])
    rows = []
    for i, args in enumerate(cases):
        if op == "crd2crd":
            row = {"args": enc(args)}
        elif op in VOCABULARY:
            row = {"args": vocabulary_args(op, args)}
        else:
            n, (shape, stride) = args
            row = {"args": [{"L": [enc(shape), enc(stride)]}, n]}
        if i in failed:
            row["error"] = failed[i]
        else:
            row["result"] = parse(printed[i].strip())
        rows.append(row)
    path = OUT / f"cpp_{op}.json"
    path.write_text(json.dumps({"source": VERSION, "seed": SEED, "op": op, "cases": rows}, separators=(",", ":")))
    print(f"{path.name}: {len(rows)} cases, {len(failed)} refused")


CORNERS = {
    "crd2crd": [[13, (4, 8), (4, 8)], [(1, 3), (4, 8), 32], [(1, 5), (2, 6), (2, (2, 3))], [(1, (1, 2)), (2, (2, 3)), (2, 6)],
                [5, (2, (2, 3)), ((2, 2), 3)], [(0, 2), (1, 4), (1, (2, 2))], [3, 6, (2, 3)]],
    "upcast": [[4, ((16, 8), (1, 16))], [4, (3, 1)], [2, ((8, 1), (3, 3))], [4, ((4, 2), (0, 1))], [2, (6, -1)],
               [4, ((2, (2, 4)), (1, (2, 8)))], [8, ((1, 4), (1, 2))]],
    "downcast": [[4, ((4, 8), (1, 4))], [2, (4, 2)], [2, ((4, 2), (0, 1))], [4, (6, -1)], [2, ((2, (2, 4)), (2, (1, 8)))]],
}


def main(argv):
    if not argv:
        sys.exit(__doc__)
    rng = random.Random(SEED)
    generate(argv, "crd2crd", CORNERS["crd2crd"] + crd2crd_cases(rng, 600))
    for op in ("upcast", "downcast"):
        generate(argv, op, CORNERS[op] + cast_cases(rng, 400))
    for op, cases in vocabulary_cases(rng, 150).items():
        generate(argv, op, cases)


if __name__ == "__main__":
    main(sys.argv[1:])
