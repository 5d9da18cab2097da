"""Generate the parity data: NVIDIA's CuTe DSL answers for the layout algebra, written to ``tests/parity/*.json``.

Run it only where the CuTe DSL is installed, in a virtual environment of its own (its wheel is large, under
NVIDIA's licence, and no dependency of pycute; the ``nvidia-cutlass`` wheel would also clash with ``pycute``):

    python3 -m venv /tmp/cute-dsl && /tmp/cute-dsl/bin/pip install nvidia-cutlass-dsl==4.8.1
    /tmp/cute-dsl/bin/python tests/parity/generate.py

Each operation gets hand-picked corner cases and random cases from a fixed seed. A case is ``{"args": [...],
"result": ...}`` or ``{"args": [...], "error": "..."}`` when the DSL refuses; layouts are written as
``{"L": [shape, stride]}`` with tuples as lists, composed layouts as ``{"C": [[B, M, S], offset, inner]}``, and a
``None`` tiler mode as ``null``. Only the DSL's answers are recorded here; nothing of its code is copied.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import cutlass  # noqa: F401  (registers the DSL)
import cutlass.cute as cute

OUT = Path(__file__).resolve().parent
SEED = 20261130
PER_OP = 1500
VERSION = "nvidia-cutlass-dsl 4.8.1"


# -- serialisation --------------------------------------------------------------------------------------------
def enc(x):
    """A DSL value (layout, composed layout, IntTuple, None) as JSON."""
    if x is None:
        return None
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return x
    if isinstance(x, tuple):
        return [enc(e) for e in x]
    if type(x).__name__ == "_ComposedLayout" or hasattr(x, "inner") and hasattr(x, "outer"):
        sw = x.inner
        return {"C": [[sw.num_bits, sw.num_base, sw.num_shift], enc(x.offset), enc(x.outer)]}
    if hasattr(x, "shape") and hasattr(x, "stride"):
        return {"L": [enc(x.shape), enc(x.stride)]}
    raise TypeError(f"cannot encode {x!r} ({type(x).__name__})")


def tup(x):
    return tuple(tup(e) for e in x) if isinstance(x, list) else x


def dec(x):
    """JSON -> a DSL value (built inside the jit function)."""
    if isinstance(x, dict) and "L" in x:
        shape, stride = tup(x["L"][0]), tup(x["L"][1])
        return cute.make_layout(shape, stride=stride)
    if isinstance(x, dict) and "C" in x:
        (b, m, s), offset, inner = x["C"]
        return cute.make_composed_layout(cute.make_swizzle(b, m, s), offset, dec(inner))
    if isinstance(x, list):
        return tuple(dec(e) for e in x)
    return x


def L(shape, stride):
    return {"L": [shape, stride]}


# -- random inputs ------------------------------------------------------------------------------------------------
R = random.Random(SEED)
EXTENTS = [1, 2, 2, 3, 4, 4, 6, 8]


def rand_shape(rank=None, depth=2):
    rank = rank or R.choice([1, 1, 2, 2, 2, 3])
    out = []
    for _ in range(rank):
        if depth > 1 and R.random() < 0.2:
            out.append(rand_shape(R.choice([1, 2, 2, 3]), depth - 1))
        else:
            out.append(R.choice(EXTENTS))
    return out if rank > 1 or R.random() < 0.15 else out[0]


def leaves(t):
    return [v for e in t for v in leaves(e)] if isinstance(t, list) else [t]


def like(t, values):
    it = iter(values)

    def build(x):
        return [build(e) for e in x] if isinstance(x, list) else next(it)
    return build(t)


def compact(shape, order=None):
    """Column-major strides in a random (or given) mode order, size-1 modes included."""
    flat = leaves(shape)
    order = order or R.sample(range(len(flat)), len(flat))
    strides, current = [0] * len(flat), 1
    for i in order:
        strides[i] = current
        current *= flat[i]
    return like(shape, strides)


def rand_layout(kind=None, shape=None):
    shape = shape if shape is not None else rand_shape()
    kind = kind or R.choice(["compact", "compact", "dilated", "random", "zeros"])
    if kind == "compact":
        stride = compact(shape)
    elif kind == "dilated":
        k = R.choice([2, 3, 4])
        stride = like(shape, [k * d for d in leaves(compact(shape))])
    elif kind == "zeros":
        stride = like(shape, [0 if R.random() < 0.4 else d for d in leaves(compact(shape))])
    else:
        stride = like(shape, [R.choice([0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32]) for _ in leaves(shape)])
    return L(shape, stride)


def size(x):
    if isinstance(x, dict):
        return size(x["L"][0])
    n = 1
    for v in leaves(x):
        n *= v
    return n


def rand_tiler_for(a_shape):
    """A tiler for a layout of shape ``a_shape``: a layout, an int, or a tuple (with None / nested modes)."""
    choice = R.random()
    if choice < 0.35:
        return rand_layout(R.choice(["compact", "dilated", "random"]), rand_shape(R.choice([1, 1, 2]), 1))
    if choice < 0.55 or not isinstance(a_shape, list):
        return R.choice([1, 2, 3, 4, 6, 8])
    modes = []
    for s in a_shape[:R.choice(range(1, len(a_shape) + 1))]:
        r = R.random()
        if r < 0.15:
            modes.append(None)
        elif r < 0.5:
            modes.append(R.choice([d for d in (1, 2, 3, 4, 6, 8) if d <= size(s)] or [1]))
        else:
            modes.append(rand_layout(R.choice(["compact", "dilated", "random"]), rand_shape(R.choice([1, 1, 2]), 1)))
    return modes


# -- operations: name -> (DSL call on decoded args, corner cases, random case generator) --------------------------------
def corner_layouts():
    return [L(1, 0), L(1, 5), L(4, 1), L(4, 0), L(4, 2), L([4, 1], [2, 3]), L([4, 1], [1, 0]), L([1, 4], [3, 1]),
            L([1, 1], [3, 5]), L([2, 1], [1, 5]), L([4, 6], [6, 1]), L([4, 6], [1, 6]), L([4, 2], [0, 1]),
            L([2, 3], [7, 1]), L([2, [2, 4]], [1, [2, 4]]), L([[2, 2], [2, 2]], [[1, 4], [8, 32]]),
            L([12, [4, 8]], [59, [13, 1]]), L([8, 8], [1, 8]), L([8, 4], [1, 8]), L([3, 2], [0, 1]),
            L([2, [1, 6]], [1, [6, 2]]), L([[4, 1], 8], [[1, 0], 4]), L([4, 2, 8], [1, 0, 4])]


def ops():
    c = corner_layouts()
    return {
        "coalesce": (lambda a: cute.coalesce(a), [[x] for x in c], lambda: [rand_layout()]),
        "coalesce_profile": (lambda a, p: cute.coalesce(a, target_profile=p),
                             [[L([[2, 2], [2, 2]], [[1, 2], [4, 16]]), [1, 1]], [L([4, 1, 8], [1, 7, 4]), [1, 1, 1]],
                              [L([4, [1, 8]], [1, [3, 4]]), [1, 1]]],
                             lambda: _profiled(rand_layout(shape=rand_shape(R.choice([2, 3]))))),
        "filter": (lambda a: cute.filter(a), [[x] for x in c], lambda: [rand_layout("zeros")]),
        "composition": (lambda a, b: cute.composition(a, b),
                        [[L([8, 4], [1, 8]), L([4, 1], [2, 3])], [L([6, 2], [8, 2]), L([4, 3], [3, 1])],
                         [L([4, 3], [2, 100]), L(6, 1)], [L([3, 2], [0, 1]), L([2, 3], [1, 1])],
                         [L([12, [4, 8]], [59, [13, 1]]), [L(3, 4), L(8, 1)]], [L([12, [4, 8]], [59, [13, 1]]), [None, 4]],
                         [L([12, [4, 8]], [59, [13, 1]]), 3], [L([4, 8], [8, 1]), L(5, 0)], [L([6, 2], [1, 7]), L(2, 4)],
                         [L([4, 6], [6, 1]), L(1, 1)], [L([4, 6], [6, 2]), L(1, 1)], [L(8, 2), L([2, 2], [2, -1])],
                         [L([2, 3], [3, 1]), L(12, 1)]],
                        lambda: _composition_case()),
        "complement": (lambda a, t: cute.complement(a, t),
                       [[L(4, 2), 24], [L(4, 1), 24], [L([2, 2], [1, 6]), 24], [L(4, 2), 7], [L([4, 6], [1, 6]), 48],
                        [L(4, 2), [3, 8]], [L(1, 0), 8], [L(4, 0), 8], [L([2, 2], [1, 1]), 8], [L([4, 2], [0, 1]), 16],
                        [L([2, 3], [7, 1]), 14], [L(1, 1), [4, 6]]],
                       lambda: [rand_layout(R.choice(["compact", "dilated", "zeros", "random"])),
                                R.choice([R.choice([8, 16, 24, 32, 48, 64, 96, 128]), rand_shape(2, 1)])]),
        "right_inverse": (lambda a: cute.right_inverse(a), [[x] for x in c], lambda: [rand_layout()]),
        "left_inverse": (lambda a: cute.left_inverse(a), [[x] for x in c],
                         lambda: [rand_layout(R.choice(["compact", "dilated", "zeros"]))]),
        "logical_divide": (lambda a, b: cute.logical_divide(a, b), _divide_corners(), _divide_case),
        # The DSL's zipped/tiled/flat divides take no bare int tiler (its Python wrapper does not pack one); in
        # CuTe an int tiler n is the layout n:1, so these cases ask with that layout.
        "zipped_divide": (lambda a, b: cute.zipped_divide(a, b), _int_as_layout(_divide_corners()),
                          lambda: _int_as_layout([_divide_case()])[0]),
        "tiled_divide": (lambda a, b: cute.tiled_divide(a, b), _int_as_layout(_divide_corners()),
                         lambda: _int_as_layout([_divide_case()])[0]),
        "flat_divide": (lambda a, b: cute.flat_divide(a, b), _int_as_layout(_divide_corners()),
                        lambda: _int_as_layout([_divide_case()])[0]),
        "logical_product": (lambda a, b: cute.logical_product(a, b), _product_corners(), _product_case),
        # The DSL's zipped/tiled/flat products pack no int or tuple tiler: layout tilers only (the tuple path is
        # covered through logical_product).
        "zipped_product": (lambda a, b: cute.zipped_product(a, b), _product_corners(layouts_only=True),
                           lambda: _product_case(layouts_only=True)),
        "tiled_product": (lambda a, b: cute.tiled_product(a, b), _product_corners(layouts_only=True),
                          lambda: _product_case(layouts_only=True)),
        "flat_product": (lambda a, b: cute.flat_product(a, b), _product_corners(layouts_only=True),
                         lambda: _product_case(layouts_only=True)),
        "blocked_product": (lambda a, b: cute.blocked_product(a, b), _product_corners(layouts_only=True),
                            lambda: _product_case(layouts_only=True)),
        "raked_product": (lambda a, b: cute.raked_product(a, b), _product_corners(layouts_only=True),
                          lambda: _product_case(layouts_only=True)),
        "idx2crd": (lambda i, s: cute.idx2crd(i, s),
                    [[[1, 3], [2, [2, 4]]], [[2, 1], [3, 4]], [5, [4, 8]], [0, 1], [3, 1], [7, [2, [1, 4]]],
                     [[1, 5], [2, [2, 4]]], [5, [[2, 2], 2]]],
                    lambda: _idx_case()),
        "crd2idx": (lambda c_, a: cute.crd2idx(c_, a),
                    [[[1, 2], L([4, 8], [8, 1])], [5, L([4, 8], [8, 1])], [[1, [1, 1]], L([2, [2, 4]], [1, [2, 4]])],
                     [[1, 3], L([2, [2, 4]], [1, [2, 4]])], [7, L([2, [1, 4]], [3, [0, 5]])]],
                    lambda: _crd_case()),
        "recast": (lambda new, old, a: cute.recast_layout(new, old, a),
                   [[32, 16, L([8, 4], [1, 8])], [8, 32, L([4, 4], [1, 4])], [16, 8, L([16, 8], [1, 16])],
                    [32, 8, L([2, 8], [1, 2])], [8, 16, L(4, 2)], [16, 8, L(1, 0)], [16, 8, L([4, 2], [0, 1])],
                    [32, 16, L([2, 4], [4, 1])], [8, 8, L([4, 8], [8, 1])]],
                   lambda: _recast_case()),
        "max_common_vector": (lambda a, b: cute.max_common_vector(a, b), _common_corners(), _common_case),
        "max_common_layout": (lambda a, b: cute.max_common_layout(a, b), _common_corners(), _common_case),
        "tile_to_shape": (lambda a, s, o: cute.tile_to_shape(a, s, o),
                          [[L([2, 2], [1, 2]), [4, 6], [0, 1]], [L([2, 2], [1, 2]), [4, 6], [1, 0]],
                           [L(2, 1), [4, 6], [0, 1]], [L([2, 2], [1, 2]), [[2, 2], 6], [0, 1]],
                           [L([2, 2], [1, 2]), [5, 4], [0, 1]]],
                          lambda: _tile_case()),
        "make_ordered_layout": (lambda s, o: cute.make_ordered_layout(s, order=o),
                                [[[4, 8], [1, 0]], [[2, 3, 4], [2, 0, 1]], [[2, 3], [0, 0]], [[[2, 2], 3], [[1, 0], 2]],
                                 [[1, 4, 1], [0, 1, 2]], [4, 0]],
                                lambda: _ordered_case()),
        "make_layout": (lambda s: cute.make_layout(s), [[[4, 1]], [[1, 4, [1, 2]]], [1], [[[2, 1], 3]]],
                        lambda: [rand_shape()]),
        "slice_and_offset": (lambda c_, a: cute.slice_and_offset(c_, a),
                             [[[None, 3], L([4, 8], [8, 1])], [[2, None], L([4, 8], [8, 1])],
                              [[None, [1, None]], L([2, [3, 4]], [1, [2, 6]])], [[1, None], L([2, [3, 4]], [1, [2, 6]])],
                              [[1, [2, 3]], L([2, [3, 4]], [1, [2, 6]])], [None, L([2, [3, 4]], [1, [2, 6]])],
                              [[None, None], L([2, [3, 4]], [1, [2, 6]])], [5, L([2, [3, 4]], [1, [2, 6]])]],
                             lambda: _slice_case()),
        "composed_composition": (lambda a, b: cute.composition(a, b), _composed_corners(), _composed_case),
        "composed_logical_divide": (lambda a, b: cute.logical_divide(a, b), _composed_corners(), _composed_case),
        "composed_zipped_divide": (lambda a, b: cute.zipped_divide(a, b), _int_as_layout(_composed_corners()),
                                   lambda: _int_as_layout([_composed_case()])[0]),
        "composed_coalesce": (lambda a: cute.coalesce(a), [[x[0]] for x in _composed_corners()],
                              lambda: [_composed_case()[0]]),
    }


def _int_as_layout(cases):
    """``[layout, n]`` -> ``[layout, n:1]``: a bare int tiler as the layout CuTe makes of it."""
    return [[a, L(b, 1)] if isinstance(b, int) else [a, b] for a, b in cases]


def _profiled(a):
    shape = a["L"][0]
    return [a, [1] * len(shape) if isinstance(shape, list) else 1]


def _composition_case():
    a = rand_layout()
    r = R.random()
    if r < 0.6:
        b = rand_layout(R.choice(["compact", "dilated", "random", "zeros"]))
    elif r < 0.75:
        b = R.choice([1, 2, 3, 4, 6, 8, 12, 16])
    else:
        b = rand_tiler_for(a["L"][0])
    return [a, b]


def _divide_corners():
    return [[L([4, 6], [6, 1]), L(1, 1)], [L([4, 2, 3], [2, 1, 8]), L(4, 2)], [L([8, 8], [1, 8]), 4],
            [L([8, 8], [1, 8]), [2, 4]], [L([9, [4, 8]], [59, [13, 1]]), [L(3, 3), L([2, 4], [1, 8])]],
            [L([8, 8], [1, 8]), [None, 4]], [L([8, 8], [1, 8]), [L([2, 2], [1, 4]), 4]], [L([2, 5], [5, 1]), 4],
            [L(16, 1), L([2, 2], [1, 8])], [L([4, 8], [8, 1]), [2]], [L([6, 4], [1, 6]), L(4, 1)]]


def _divide_case():
    a = rand_layout(shape=rand_shape(R.choice([1, 2, 2, 3])))
    return [a, rand_tiler_for(a["L"][0])]


def _product_corners(layouts_only=False):
    out = [[L([2, 2], [1, 2]), L([2, 3], [3, 1])], [L(8, 1), L(4, 1)], [L([4, 4], [1, 4]), L(2, 1)],
           [L([2, 3], [3, 1]), L([1, 4], [4, 2])], [L([2, 5], [5, 1]), L(4, 1)], [L(2, 1), L(3, 2)],
           [L([2, 2], [1, 2]), L([2, 3, 2], [1, 2, 6])], [L([2, 2], [2, 1]), L(1, 0)]]
    if not layouts_only:
        out += [[L([2, 2], [1, 2]), 3], [L([2, 2], [1, 2]), [3, 2]], [L([2, 2], [1, 2]), [L(3, 1), None]],
                [L(2, 1), [L(3, 1)]]]
    return out


def _product_case(layouts_only=False):
    a = rand_layout(R.choice(["compact", "compact", "dilated", "zeros"]), rand_shape(R.choice([1, 2, 2, 3]), 1))
    if layouts_only or R.random() < 0.6:
        return [a, rand_layout(R.choice(["compact", "compact", "dilated", "zeros"]), rand_shape(R.choice([1, 2, 3]), 1))]
    return [a, rand_tiler_for(a["L"][0])]


def _idx_case():
    shape = rand_shape()
    n = size(shape)
    if isinstance(shape, list) and R.random() < 0.4:
        return [[R.randrange(size(s)) if not isinstance(s, list) or R.random() < 0.7 else
                 _crd_in(s) for s in shape], shape]
    return [R.randrange(max(n, 1)), shape]


def _crd_in(shape):
    if isinstance(shape, list):
        return [_crd_in(s) if R.random() < 0.7 else R.randrange(size(s)) for s in shape]
    return R.randrange(shape)


def _slice_crd(shape):
    if isinstance(shape, list) and R.random() < 0.8:
        return [_slice_crd(s) for s in shape]
    return None if R.random() < 0.5 else R.randrange(size(shape))


def _slice_case():
    a = rand_layout(R.choice(["compact", "random", "zeros"]))
    return [_slice_crd(a["L"][0]), a]


def _crd_case():
    a = rand_layout(R.choice(["compact", "random", "zeros"]))
    shape = a["L"][0]
    return [R.randrange(size(shape)) if R.random() < 0.4 else _crd_in(shape), a]


def _recast_case():
    old, new = R.choice([(8, 16), (16, 8), (8, 32), (32, 8), (16, 32), (32, 16), (4, 8), (8, 4), (16, 16)])
    shape = rand_shape(R.choice([1, 2, 2, 3]), 1)
    a = rand_layout(R.choice(["compact", "compact", "dilated", "zeros"]), shape)
    return [new, old, a]


def _common_corners():
    return [[L([8, 4], [1, 8]), L([8, 4], [1, 16])], [L([4, 8], [8, 1]), L([4, 8], [1, 4])], [L(8, 1), L(8, 2)],
            [L([2, 4], [4, 1]), L([2, 4], [1, 2])], [L(1, 0), L(1, 0)]]


def _common_case():
    shape = rand_shape(R.choice([1, 2, 2, 3]), 1)
    return [rand_layout(R.choice(["compact", "compact", "dilated", "zeros"]), shape),
            rand_layout(R.choice(["compact", "compact", "dilated", "zeros"]), shape)]


def _tile_case():
    block = rand_layout(R.choice(["compact", "dilated"]), rand_shape(R.choice([1, 2]), 1))
    bs = block["L"][0] if isinstance(block["L"][0], list) else [block["L"][0]]
    rank = R.choice([len(bs), len(bs) + 1]) if len(bs) < 3 else len(bs)
    target = [(bs[i] if i < len(bs) else 1) * R.choice([1, 2, 3, 4]) for i in range(rank)]
    order = R.sample(range(rank), rank)
    return [block, target, order]


def _ordered_case():
    shape = rand_shape()
    if not isinstance(shape, list):
        return [shape, R.randrange(3)]
    order = like(shape, R.sample(range(len(leaves(shape))), len(leaves(shape))) if R.random() < 0.7 else
                 [R.randrange(3) for _ in leaves(shape)])
    return [shape, order]


def _composed_corners():
    sw = [3, 4, 3]
    return [[{"C": [sw, 0, L([8, 64], [64, 1])]}, [4, 8]], [{"C": [sw, 0, L([8, 64], [64, 1])]}, L(8, 8)],
            [{"C": [[2, 3, 3], 0, L([16, 32], [32, 1])]}, [L(8, 1), L(16, 2)]], [{"C": [[1, 2, 3], 8, L(64, 1)]}, 16]]


def _composed_case():
    b, m = R.choice([0, 1, 2, 3]), R.choice([0, 1, 2, 3, 4])
    s = R.choice([b, b + 1, b + 2, 3]) or 1
    inner = rand_layout(R.choice(["compact", "compact", "dilated"]), rand_shape(R.choice([1, 2, 2]), 1))
    return [{"C": [[b, m, s], R.choice([0, 0, 0, 8, 16]), inner]}, rand_tiler_for(inner["L"][0])]


# -- run ------------------------------------------------------------------------------------------------------------
def _evaluate(call, todo):
    """Evaluate the cases one by one (plain Python, called inside a jit function, where the DSL's algebra runs),
    printing one JSON line per case as soon as it is known."""
    for args in todo:
        try:
            line = {"args": args, "result": enc(call(*[dec(a) for a in args]))}
        except Exception as e:                            # the DSL refused: record why
            text = [t for t in str(e).strip().splitlines() if t and "Operation creation failed" not in t]
            line = {"args": args, "error": f"{type(e).__name__}: {text[0] if text else ''}"[:160]}
        print(json.dumps(line), flush=True)


def worker(name):
    """``generate.py --worker NAME``: evaluate the JSON list of argument lists on stdin."""
    todo = json.load(sys.stdin)
    call = ops()[name][0]

    @cute.jit
    def evaluate():
        _evaluate(call, todo)
    evaluate()


def run(name, todo):
    """Every case's answer. The DSL's compiled algebra can crash the process (e.g. SIGFPE on a division by zero):
    the case it died on is recorded as refused and evaluation resumes after it in a new worker."""
    cases, seen, unique = [], set(), []
    for args in todo:
        key = json.dumps(args)
        if key not in seen:
            seen.add(key)
            unique.append(args)
    while len(cases) < len(unique):
        rest = unique[len(cases):]
        proc = subprocess.run([sys.executable, __file__, "--worker", name], input=json.dumps(rest),
                              capture_output=True, text=True)
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        cases += lines
        if proc.returncode and len(cases) < len(unique):
            cases.append({"args": unique[len(cases)], "error": f"the DSL process died (exit {proc.returncode})"})
    return cases


def main(argv):
    if len(argv) > 2 and argv[1] == "--worker":
        return worker(argv[2])
    names = argv[1:] or list(ops())
    for name in names:
        _, corners, random_case = ops()[name]
        R.seed(f"{SEED}-{name}")
        cases = run(name, list(corners) + [random_case() for _ in range(PER_OP)])
        (OUT / f"{name}.json").write_text(json.dumps({"source": VERSION, "seed": SEED, "op": name, "cases": cases},
                                                     separators=(",", ":")) + "\n")
        print(f"{name:24} {len(cases):5} cases, {sum('error' in c for c in cases):4} refused by the DSL")


if __name__ == "__main__":
    main(sys.argv)
