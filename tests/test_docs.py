"""The API reference builds: ``mkdocs build --strict`` (warnings are errors) renders docs/ and every name of
``pycute.__all__`` from its docstring. MkDocs and mkdocstrings are in the test extras."""
import collections
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

import pycute as pc

ROOT = pathlib.Path(__file__).resolve().parents[1]
needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None,
    reason="mkdocs and mkdocstrings[python] are in the test extras: pip install '.[test]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@needs_mkdocs
def test_the_reference_builds_with_warnings_as_errors(site):
    assert (site / "api" / "index.html").is_file() and (site / "index.html").is_file()


@needs_mkdocs
def test_every_exported_name_is_in_the_reference(site):
    html = (site / "api" / "index.html").read_text()
    ids = set(re.findall(r'id="pycute\.([A-Za-z_0-9.]+)"', html))
    code = set(re.findall(r"<code>([A-Za-z_0-9]+)</code>", html))
    documented = ids | {i.rsplit(".", 1)[-1] for i in ids} | code
    assert [n for n in pc.__all__ if n not in documented] == []


@needs_mkdocs
def test_the_notes_are_pages_of_the_site(site):
    for note in ("ptx-tcgen05", "tcgen05-ld-st", "tcgen05-mma-operands", "tcgen05-cp-decompression",
                 "toolchain-cpu-only"):
        assert (site / note / "index.html").is_file(), note


DOCS = ROOT / "docs"
RUNS = DOCS / "runs"
RAW = (".jsonl", ".log", ".json")


def _links(page: pathlib.Path) -> list[str]:
    return re.findall(r"\]\(([^)#\s]+)\)", page.read_text())


def test_every_page_is_in_the_notes_index():
    listed = set(_links(DOCS / "README.md"))
    assert sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p.name not in listed) == []


def test_raw_run_files_live_under_docs_runs_by_topic():
    stray = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*") if p.suffix in RAW
                   and (p.parent.parent != RUNS or p.parent == RUNS))
    assert stray == [], "raw run files go under docs/runs/<topic>/"


def test_the_runs_index_lists_every_run_file_and_each_link_resolves():
    index = RUNS / "README.md"
    links = _links(index)
    assert [link for link in links if not (index.parent / link).resolve().exists()] == []
    files = {str(p.relative_to(RUNS)) for p in RUNS.rglob("*") if p.suffix in RAW}
    listed = {str((RUNS / link).resolve().relative_to(RUNS.resolve())) for link in links
              if link.endswith(RAW)}
    assert sorted(files - listed) == [], "add a row to docs/runs/README.md for each run file"


def _tracked_text() -> list[pathlib.Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    return [ROOT / n for n in names if n.endswith((".py", ".md", ".sh", ".toml", ".yml", ".txt"))
            and not n.startswith("docs/runs/") and (ROOT / n).is_file()]


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the git checkout (git ls-files)")
def test_every_cited_run_file_exists():
    cited = {(p.relative_to(ROOT), m) for p in _tracked_text()
             for m in re.findall(r"docs/runs/[\w./-]+?\.(?:jsonl|json|log)\b", p.read_text(encoding="utf-8"))}
    assert sorted(f"{p} cites {m}" for p, m in cited if not (ROOT / m).is_file()) == []


def _repeats(text: str, n: int = 12) -> list[str]:
    """Every run of ``n`` words a page's prose (code blocks and table rows left out) says more than once."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    words = " ".join(line for line in text.splitlines() if not line.lstrip().startswith("|")).split()
    seen = collections.Counter(" ".join(words[k:k + n]) for k in range(len(words) - n + 1))
    return [run for run, count in seen.items() if count > 1]


@pytest.mark.parametrize("page", sorted([*DOCS.glob("*.md"), ROOT / "README.md"]), ids=lambda p: p.name)
def test_no_page_says_the_same_twelve_words_twice(page):
    """A page spliced from two edits repeats itself (docs/interpreter.md's arguments and Speed paragraphs did)."""
    assert _repeats(page.read_text()) == []


@pytest.mark.parametrize("ldd, rule", [(517, "a tensor map stride is a multiple of 16 B"),
                                       (520, "a TMA store writes every 16-byte unit it touches whole")])
def test_hopper_gemm_md_names_the_rule_that_refuses_each_unaligned_d(ldd, rule):
    """The GEMM's epilogue plan (make_epilogue -> make_tma_copy) on a bf16 D of 517 columns refuses with the rule
    docs/hopper-gemm.md quotes for that pitch."""
    from pycute import Layout
    d = pc.make_global_tensor(pc.bf16, Layout((333, 517), (ldd, 1)))
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), 2)[:, :, pc.dynamic("slot")]
    with pytest.raises(pc.PlanError, match=re.escape(rule)):
        pc.make_epilogue(pc.wgmma_accumulator(pc.f32, 64, 64), ring, d, barrier_id=pc.dynamic("bar"))
    page = re.sub(r"\s+", " ", (DOCS / "hopper-gemm.md").read_text())
    assert f"`ldd = N = 517`" in page and "`ldd=520`" in page and rule in page
