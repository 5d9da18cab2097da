"""SVG pictures: well-formed XML, and cell for cell what the layouts and the emulator say: a layout's cells carry
its values, a shared-memory picture's chunks hold the elements its labels name, and the TMEM cells a plan picture
colours for instruction k are exactly the cells the emulator writes when it runs instruction k alone."""
import xml.etree.ElementTree as ET

import re

import numpy as np
import pytest

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle, TCol, TLane
from pycute.arch.sm100.tmem import split_address
from pycute.copy.tcgen05_cp.reference import fill_pattern
from pycute.tensor.values import smem_bytes_needed
from pycute.demo import demo_copies
from pycute.sim import Sm100Emulator
from pycute.viz.text import cell_value

NS = "{http://www.w3.org/2000/svg}"
PLANS = demo_copies()


def parse(svg) -> ET.Element:
    return ET.fromstring(str(svg))


def _rects(node, inherited):
    """Every rect under ``node`` with the ``data-*`` of its groups (a grid row's ``<g data-row>``) and its own; in a
    row, a cell's column is its position among the row's cells."""
    here = inherited | {k[5:]: v for k, v in node.attrib.items() if k.startswith("data-")}
    if node.tag == f"{NS}rect":
        yield node, here
    column = 0
    for child in node:
        if "row" in here and "row" not in inherited and child.tag == f"{NS}rect":
            yield child, here | {"col": str(column)} | {k[5:]: v for k, v in child.attrib.items()
                                                       if k.startswith("data-")}
            column += 1
            continue
        yield from _rects(child, here)


def fill_of(root):
    """class -> the fill its style rule sets."""
    css = "".join(e.text or "" for e in root.iter(f"{NS}style"))
    return {m.group(1): m.group(2) for m in re.finditer(r"\.(c[0-9a-f]+)\{fill:([^;}]+)", css)}


def cells(root, **match):
    """The rects with data attributes, as dicts of those attributes (a rect over lanes ``a-b`` stands for one
    rect per lane of the run)."""
    out, fills = [], fill_of(root)
    for r, data in _rects(root, {}):
        if not data:
            continue
        runs = [data]
        if "lanes" in data:
            lo, hi = (int(x) for x in data["lanes"].split("-"))
            runs = [data | {"lane": str(lane)} for lane in range(lo, hi + 1)]
        for d in runs:
            if all(d.get(k) == str(v) for k, v in match.items()):
                out.append(d | {"fill": fills[r.attrib["class"]]})
    return out


@pytest.mark.parametrize("layout", [Layout((4, 8), (1, 4)), Layout(((2, 2), (2, 4)), ((1, 8), (2, 16))),
                                    ComposedLayout(Swizzle(2, 1, 3), 0, Layout((4, 8), (8, 1))),
                                    Layout((4, 4), (TLane, 2 * TCol)), Layout((2, 3, 2))])
def test_a_layout_picture_has_one_cell_per_coordinate_showing_its_value(layout):
    root = parse(pc.draw_layout(layout))
    got = {(int(c["row"]), int(c["col"])): c["value"] for c in cells(root)}
    rows, cols = max(m for m, _ in got) + 1, max(n for _, n in got) + 1
    assert rows * cols == pc.size(layout) == len(got)
    tmem = "TLane" in repr(layout)
    for (m, n), text in got.items():
        v = cell_value(layout, m, n)
        if tmem:
            terms = {} if v == 0 else v.as_dict()
            assert text == f"{terms.get('TLane', 0)},{terms.get('TCol', 0)}"
        else:
            assert text == str(v)


def test_a_large_layout_is_elided_and_says_so():
    svg = str(pc.draw_layout(Layout((128, 512), (1, 128))))
    assert "showing rows 0..127 of 128 and columns 0..127 of 512" in svg and "colours only" in svg
    assert len(cells(parse(svg))) == 128 * 128


@pytest.mark.parametrize("how", ["row", "col", "bank", "chunk", lambda v: v % 3])
def test_cells_can_be_coloured_by_other_functions(how):
    root = parse(pc.draw_layout(Layout((8, 8), (8, 1)), color_by=how))
    fills = {c["fill"] for c in cells(root)}
    assert 1 < len(fills) <= 64


def test_a_bad_colouring_is_refused():
    with pytest.raises(ValueError, match="color_by must be one of"):
        pc.draw_layout(Layout(4), color_by="rainbow")
    with pytest.raises(TypeError, match="expected a Layout"):
        pc.draw_layout("4:1")


@pytest.mark.parametrize("swizzle", ["none", "32B", "128B"])
def test_smem_chunks_hold_the_elements_their_labels_name(swizzle):
    from pycute.tensor.canonical import kmajor_smem_tensor
    t = kmajor_smem_tensor(pc.bf16, 16, 64, swizzle)
    root = parse(pc.draw_smem(t))
    labelled = [c for c in cells(root) if c.get("element")]
    assert len(labelled) == 2 * 16 * 64 * 2 // 16            # both panels, 16-byte chunks of 2-byte elements
    stored = labelled[len(labelled) // 2:]                   # the right panel: as stored
    for c in stored:
        m, n = map(int, c["element"].split(","))
        assert t.element_offset(m, n) * 2 // 16 == int(c["chunk"])


def emulated_cells(plan, k):
    """The TMEM cells (cta, lane, column) the emulator changes when it runs only instruction ``k`` of ``plan``."""
    marker = 0x5A5A5A5A
    nbytes = smem_bytes_needed(plan.src)
    emu = Sm100Emulator(smem_bytes=nbytes, ctas=plan.cta_group, fill_tmem=marker)
    for c in range(plan.cta_group):
        emu.write_smem(0, fill_pattern(nbytes, 7 + c), cta=c)
    base = emu.alloc(plan.dst.columns, cta_group=plan.cta_group)
    emu.run([plan.stream(0, base)[k]])
    out = set()
    for c in range(plan.cta_group):
        lanes, cols = np.nonzero(emu.tmem_image(c) != marker)
        out |= {(c, int(a), int(b) - split_address(base)[1]) for a, b in zip(lanes, cols)}
    return out


@pytest.mark.parametrize("label, plan", PLANS, ids=[f"{i}-{p.atom.name}-g{p.cta_group}" for i, (_, p) in
                                                    enumerate(PLANS)])
def test_plan_cells_of_each_instruction_are_what_the_emulator_writes(label, plan):
    root = parse(plan.draw())
    drawn = cells(root)
    tmem = [c for c in drawn if "lane" in c]
    for k in range(len(plan.instructions)):
        mine = {(int(c["cta"]), int(c["lane"]), col) for c in tmem if c["instr"] == str(k)
                for col in range(int(c["col0"]), int(c["col0"]) + int(c["ncols"]))}
        assert mine == emulated_cells(plan, k)
        fills = {c["fill"] for c in tmem if c["instr"] == str(k)}
        assert len(fills) == 1                                       # one colour per instruction...
        smem_fills = {c["fill"] for c in drawn if "chunk" in c and c.get("instr") == str(k)}
        assert smem_fills == fills                                   # ...the same on the shared-memory side


@pytest.mark.parametrize("label, plan", PLANS[:3], ids=["demo", "128x256b", "4x256b"])
def test_the_shared_memory_a_plan_picture_marks_is_the_source_tensors_bytes(label, plan):
    root = parse(plan.draw())
    read = {int(c["chunk"]) for c in cells(root) if "chunk" in c and c.get("instr") != ""}
    src = plan.src
    rows, cols = (pc.size(m) for m in src.layout)
    want = {src.element_offset(m, n) * src.bits // 8 // 16 for m in range(rows) for n in range(cols)}
    assert read == want


def test_replica_lanes_are_marked():
    plan = PLANS[0][1]                                               # 32x128b.warpx4: 3 replicas of 32 lanes
    tmem = [c for c in cells(parse(plan.draw())) if "lane" in c]
    replicas = {int(c["lane"]) for c in tmem if c["replica"] != "0"}
    assert replicas == set(range(32, 128))
    assert 'patternTransform="rotate(45)"' in str(plan.draw())


def test_a_two_cta_plan_draws_both_ctas():
    plan = next(p for _, p in PLANS if p.cta_group == 2)
    tmem = [c for c in cells(parse(plan.draw())) if "lane" in c]
    assert {c["cta"] for c in tmem} == {"0", "1"}


def test_notebooks_show_pictures_and_terminals_text():
    layout, plan = Layout((4, 8), (1, 4)), PLANS[0][1]
    assert layout._repr_svg_().startswith("<svg") and repr(layout) == "(4,8):(1,4)"
    assert ComposedLayout(Swizzle(2, 1, 3), 0, layout)._repr_svg_().startswith("<svg")
    assert plan._repr_svg_().startswith("<svg") and plan.src._repr_svg_().startswith("<svg")
    assert plan.dst._repr_svg_().startswith("<svg")
    assert repr(plan).startswith("Tcgen05CpPlan(")


def test_pictures_save_to_files(tmp_path):
    path = PLANS[0][1].draw().save(tmp_path / "plan.svg")
    assert ET.parse(path).getroot().tag == f"{NS}svg"


def test_the_readmes_pictures_are_what_pycute_draws_today():
    from pathlib import Path
    from pycute.tensor.canonical import kmajor_smem_tensor
    docs = Path(__file__).resolve().parents[2] / "docs" / "pictures"
    assert (docs / "demo_plan.svg").read_text() == str(PLANS[0][1].draw())
    assert (docs / "smem_128x64_bf16_sw128.svg").read_text() == \
        str(pc.draw_smem(kmajor_smem_tensor(pc.bf16, 128, 64, "128B")))


def test_pictures_style_by_class_and_are_a_third_of_the_bytes_of_per_cell_attributes():
    """Issue 19 measured 1,173,597 B for this bank-coloured grid and 435,330 B for this plan with a style on every
    cell; one class per style, sizes in the class and a group per row make them at least 3x smaller."""
    from pycute.tensor.canonical import kmajor_smem_tensor
    t = kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    grid = str(pc.draw_layout(ComposedLayout(t.swizzle, 0, t.layout), color_by="bank"))
    plan = str(pc.make_tiled_copy(pc.make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=32),
                                  t).draw())
    assert len(grid) * 3 <= 1_173_597 and len(plan) * 3 <= 435_330
    body = grid.split("</style>")[1]
    assert "<style>" in grid and body.count('fill="') == 1      # only the white background; every cell by class
