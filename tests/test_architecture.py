"""The package's structure: data flows one way through the layers, every module imports on its own, and each
hardware fact is written once."""
import ast
import io
import json
import pathlib
import re
import subprocess
import sys
import tokenize
from concurrent.futures import ThreadPoolExecutor

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "pycute"

# Lowest first. A module may import from its own layer and the layers below it, never from one above.
LAYERS = [
    {"errors", "views", "memo", "typing", "version"},
    {"int_tuple", "basis", "dtypes", "compile"},      # compile (NVRTC, cache, SASS, runtime): nothing above errors
    {"normalize"},
    {"layout"},
    {"composition", "recast", "modes"},
    {"tiling"},
    {"swizzle", "parse"},
    {"arch"},
    {"tensor"},
    {"atoms"},
    {"copy", "mma"},
    {"pipeline"},                                     # pipelines and tile schedulers: above copy and mma
    {"codegen"},
    {"sim"},                                          # the per-plan emulator, its executors, verify
    {"interp"},                                       # the PTX interpreter (one thread; whole kernels) on sim's executors
    {"harness"},
    {"testing"},                                      # the references (float64 GEMM, attention, epilogue, tolerances)
    {"kernels"},                                      # kernels users call, their launcher and torch ops
    {"cost", "viz"},
    {"demo", "cli", "__main__", "__init__", "compat"},
]
RANK = {name: k for k, names in enumerate(LAYERS) for name in names}


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def dotted(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top(name: str, path: pathlib.Path) -> str:
    """The layer key of a pycute module (``pycute.copy.rules`` -> ``copy``; the package itself -> ``__init__``)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imported(path: pathlib.Path):
    """Every pycute module ``path`` imports, at any depth (function-level imports included)."""
    package = dotted(path) if path.name == "__init__.py" else dotted(path).rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module]
        else:
            continue
        yield from (n for n in names if n == "pycute" or n.startswith("pycute."))


@pytest.mark.parametrize("path", modules(), ids=lambda p: dotted(p) if p.name != "__init__.py" else dotted(p) + ".__init__")
def test_no_module_imports_a_higher_layer(path):
    own = top(dotted(path), path) if path.name != "__init__.py" or path.parent != PACKAGE else "__init__"
    for name in imported(path):
        other = top(name, path)
        if other == "__init__" and RANK[own] < RANK["__init__"]:
            pytest.fail(f"{dotted(path)} imports the pycute package itself (every layer): use the module")
        assert RANK[other] <= RANK[own], f"{dotted(path)} ({own}) imports {name} ({other}), a higher layer"
        assert other != "testing" or own in ("testing", "kernels"), \
            f"{dotted(path)} imports {name}: the references are for tests, examples, perf, tools and kernels only"
        if own == "compile":
            assert other in ("compile", "errors", "memo"), \
                f"{dotted(path)} imports {name}: compile imports nothing above errors"


def _edges(path: pathlib.Path) -> set:
    """The pycute modules ``path`` imports, at any depth: ``from pkg import sub`` counts as importing ``pkg.sub``."""
    known = {dotted(p) for p in modules()}
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            for base in imported_from(path, node):
                subs = {f"{base}.{a.name}" for a in node.names} & known
                out.update(subs if len(subs) == len(node.names) else subs | {base})
    return out & known


def imported_from(path: pathlib.Path, node: ast.ImportFrom) -> list:
    package = dotted(path) if path.name == "__init__.py" else dotted(path).rsplit(".", 1)[0]
    if node.level:
        base = package.split(".")
        base = base[:len(base) - node.level + 1]
        return [".".join(base + ([node.module] if node.module else []))]
    return [node.module] if node.module and node.module.startswith("pycute") else []


def test_no_module_import_circle():
    """Every import, function-level ones included, as a graph of modules: it has no cycle (a circle is a layering
    the package-level test cannot see, and an import order that can break)."""
    graph = {dotted(p): _edges(p) - {dotted(p)} for p in modules()}
    state: dict = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail(f"import circle: {' -> '.join(cycle)}")
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"
    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


_IMPORT_EACH_FIRST = """
import importlib, json, sys, traceback
import pycute                                     # every import of a pycute module runs the package's init first
init = set(sys.modules)
failures = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.startswith("pycute.") and m not in init]:
        del sys.modules[loaded]                   # as a fresh interpreter has it: the package's init, nothing more
    try:
        importlib.import_module(name)
    except Exception:
        failures.append([name, traceback.format_exc().strip().splitlines()[-1]])
print(json.dumps(failures))
"""


def test_every_module_imports_first_in_a_fresh_interpreter():
    # Each module imported as first in a fresh interpreter: after the package's own init (which any import of a
    # pycute module runs first, in its fixed order) and nothing else of pycute; two child interpreters share the
    # modules.
    names = sorted({dotted(p) for p in modules()} - {"pycute.__main__"})

    def fresh(part):
        r = subprocess.run([sys.executable, "-c", _IMPORT_EACH_FIRST, *part], capture_output=True, text=True,
                           cwd=PACKAGE.parent)
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout.strip().splitlines()[-1])
    with ThreadPoolExecutor(2) as pool:
        failures = [f for part in pool.map(fresh, (names[0::2], names[1::2])) for f in part]
    assert not failures, failures


def code_text(path: pathlib.Path) -> str:
    """Source without comments and docstrings (strings that hold code, such as C in f-strings, stay)."""
    text = path.read_text()
    if path.suffix != ".py":
        return re.sub(r"//[^\n]*", "", text)
    out, prev = [], tokenize.INDENT
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            continue
        if tok.type == tokenize.STRING and prev in (tokenize.INDENT, tokenize.NEWLINE, tokenize.DEDENT):
            continue                                     # a docstring
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev = tok.type
        out.append(tok.string)
    return " ".join(out)


# include/ holds pycute/sm100.cuh, generated from arch (tests/codegen/test_header.py proves it current).
SOURCES = {str(p.relative_to(PACKAGE)): code_text(p) for p in sorted(PACKAGE.rglob("*"))
           if p.suffix in (".py", ".cu", ".cuh") and p.relative_to(PACKAGE).parts[0] != "include"}

# fact -> (a pattern that spells it, the files allowed to). Tokens are joined by spaces in SOURCES.
FACTS = {
    "descriptor bit layout": (r"DescriptorField \( \"", ["arch/sm100/descriptor.py", "arch/sm90/gmma_descriptor.py"]),
    "descriptor start field mask": (r"0x3FFF|16383", []),
    "TMEM address packing": (r"(<<|>>)\s*16\b|&\s*0xFFFF\b|65535", []),
    "TMEM lane shift": (r"LANE_SHIFT =", ["arch/sm100/tmem.py"]),
    "the multicast list": (r"warpx2::0\d_\d\d|\bwarpx4\b", ["arch/sm100/tcgen05_cp.py"]),
    # demo.py declares the article's TMEM tensor (a warpx4 replica) as a user writes it
    "row -> lane maps": (r"\* (pc \. )?TLane", ["arch/sm100/tcgen05_cp.py", "arch/sm100/datapath.py", "arch/sm100/mma.py",
                                               "demo.py"]),
    # demo.py prints the algebra of Sw<3,4,3> (a layout example, not the descriptor's modes)
    "swizzle modes": (r"Swizzle \( \d , \d , \d \)", ["arch/sm90/swizzle.py", "arch/sm100/swizzle_modes.py", "demo.py"]),
}


@pytest.mark.parametrize("fact", FACTS)
def test_each_hardware_fact_is_written_in_one_place(fact):
    pattern, homes = FACTS[fact]
    found = sorted(name for name, text in SOURCES.items() if re.search(pattern, text))
    assert found == sorted(homes), f"{fact} spelled in {found}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_functions_stay_small_enough_to_read(path):
    text = path.read_text()
    assert len(text.splitlines()) <= 400, f"{path.name} has {len(text.splitlines())} lines: split it"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            assert lines <= 60, f"{path.name}:{node.name} has {lines} lines: split it"


DOC_REF = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)\b")
REPO = PACKAGE.parent


def cited_files():
    for path in sorted(list(PACKAGE.rglob("*")) + [REPO / "README.md", REPO / "CHANGELOG.md"]):
        if path.suffix in (".py", ".cu", ".cuh", ".md") and path.is_file():
            for name in DOC_REF.findall(path.read_text(encoding="utf-8")):
                yield path, name


def test_every_cited_note_is_in_the_repository():
    missing = sorted({f"{p.relative_to(REPO)} cites {n}" for p, n in cited_files()
                      if not (REPO / n).is_file() and n not in ("README.md", "CHANGELOG.md")})
    assert not missing, missing
    assert {n for _, n in cited_files()} >= {"docs/ptx-tcgen05.md", "docs/tcgen05-ld-st.md"}
