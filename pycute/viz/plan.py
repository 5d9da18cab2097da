"""A plan's picture: TMEM as 128 lanes x the allocated columns, every cell the plan writes coloured by the
instruction that writes it (replica lanes hatched), one panel per CTA; beside it the shared memory the plan
reads, 16-byte chunks in 128-byte rows, in the same colours. The cells come from ``sim.plan_footprint``, the
emulator's own model of each instruction."""
from __future__ import annotations

from ..arch.sm100.tmem import LANES, QUADRANT_LANES
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..sim.footprint import plan_footprint
from .svg import Svg, color, text_width

__all__ = ["draw_plan"]

LANE_PX = 4
ROW_BYTES, CHUNK_BYTES = 128, 16
MAX_SMEM_ROWS = 128          # shared-memory rows drawn at most; the rest are elided (the picture says so)
MAX_LEGEND = 16


def _lane_runs(lanes, replica) -> list:
    """``(first, last, replica)`` runs of consecutive lanes of one replica: one rect each, not one per lane."""
    runs: list[list[int]] = []
    for lane, rep in sorted(zip(lanes, (int(r > 0) for r in replica))):
        if runs and runs[-1][2] == rep and runs[-1][1] == lane - 1:
            runs[-1][1] = lane
        else:
            runs.append([lane, lane, rep])
    return [tuple(r) for r in runs]


def _tmem_panel(plan: Tcgen05CpPlan, cells: list, cta: int) -> Svg:
    cols = plan.dst.alloc_columns
    w = max(2, min(12, 768 // cols))
    left, top = 44, 30
    title = f"TMEM of CTA {cta}: {LANES} lanes x {cols} columns (cell = lane x 32-bit column)"
    panel = Svg(max(left + cols * w + 10, text_width(title, 10) + 10), top + LANES * LANE_PX + 10)
    panel.text(4, 10, title, size=10, anchor="start", weight="bold")
    panel.rect(left, top, cols * w, LANES * LANE_PX, fill="#f4f4f4", stroke="#999")
    hatch = panel.hatch()
    for c in cells:
        for lo, hi, rep in _lane_runs(c.lanes, c.replica):
            y, h = top + lo * LANE_PX, (hi - lo + 1) * LANE_PX
            panel.rect(left + c.col0 * w, y, c.columns * w, h, fill=color(c.index), stroke="none", instr=c.index,
                       cta=cta, lanes=f"{lo}-{hi}", col0=c.col0, ncols=c.columns, replica=rep)
            if rep:
                panel.rect(left + c.col0 * w, y, c.columns * w, h, fill=hatch, stroke="none")
        first = min(lane for lane, rep in zip(c.lanes, c.replica) if rep == 0)
        if c.columns * w >= 10:
            panel.text(left + (c.col0 + c.columns / 2) * w, top + first * LANE_PX + 6, c.index, size=8)
    for q in range(0, LANES + 1, QUADRANT_LANES):
        panel.line(left, top + q * LANE_PX, left + cols * w, top + q * LANE_PX, stroke="#333", stroke_width=0.6)
        panel.text(left - 4, top + q * LANE_PX, q, size=8, anchor="end")
    tick = 8 if cols <= 64 else 32
    for col in range(0, cols + 1, tick):
        panel.text(left + col * w, top - 6, col, size=8)
    return panel


def _smem_rows(units: dict) -> tuple[list, str]:
    rows = sorted({u // (ROW_BYTES // CHUNK_BYTES) for u in units})
    if len(rows) <= MAX_SMEM_ROWS:
        return rows, ""
    keep = rows[:MAX_SMEM_ROWS - 16] + rows[-16:]
    return keep, f"; {len(rows) - len(keep)} of {len(rows)} rows read are elided"


def _smem_panel(plan: Tcgen05CpPlan, cells: list) -> Svg:
    units = {}
    for c in cells:
        if c.cta == 0:
            for addr in c.smem_units:
                units[addr // CHUNK_BYTES] = c.index
    rows, elided = _smem_rows(units)
    per_row, w, h = ROW_BYTES // CHUNK_BYTES, 28, 12
    title = f"shared memory read (bytes from the buffer base; cell = 16 B){elided}"
    panel = Svg(max(70 + per_row * w, text_width(title, 10) + 10), 44 + len(rows) * h)
    panel.text(4, 10, title, size=10, anchor="start", weight="bold")
    for u in range(per_row):
        panel.text(66 + u * w + w / 2, 30, f"+{u * CHUNK_BYTES}", size=8)
    y, previous = 40, None
    for r in rows:
        if previous is not None and r != previous + 1:
            panel.line(20, y - 1, 66 + per_row * w, y - 1, stroke="#888", dash="3,2")
        panel.text(62, y + h / 2, r * ROW_BYTES, size=8, anchor="end")
        for u in range(per_row):
            k = units.get(r * per_row + u)
            panel.rect(66 + u * w, y, w, h, fill=color(k) if k is not None else "#f4f4f4", sized=True,
                       chunk=r * per_row + u, instr="" if k is None else k)
            if k is not None:
                panel.text(66 + u * w + w / 2, y + h / 2, k, size=7)
        y, previous = y + h, r
    return panel


def _legend(plan: Tcgen05CpPlan) -> Svg:
    a, d, n = plan.atom, plan.descriptor, len(plan.instructions)
    lines = [f"{a.ptx}: {n} instruction{'s' if n != 1 else ''} of {a.rows} rows x {a.bits} bits",
             f"lane {plan.lane!r}    col {plan.col!r}    middle {plan.middle!r}",
             f"descriptor: swizzle {d.swizzle.name}, LBO {d.lbo} B, SBO {d.sbo} B; hatched lanes are replicas "
             f"(multicast copies of the rows)"]
    shown = plan.instructions[:MAX_LEGEND]
    legend = Svg(max(text_width(t, 10) for t in lines) + 20, 20 + 14 * len(lines) + 14 * (len(shown) + 1))
    for i, text in enumerate(lines):
        legend.text(4, 10 + 14 * i, text, size=10, anchor="start", weight="bold" if i == 0 else None)
    y = 14 * len(lines) + 14
    for k, inst in enumerate(shown):
        legend.rect(4, y - 5, 10, 10, fill=color(k))
        legend.text(20, y, f"{k}: TMEM lane {inst.lane}, column {inst.column}; smem +{inst.smem_offset} B", size=9,
                    anchor="start")
        y += 14
    if n > len(shown):
        legend.text(20, y, f"... {n - len(shown)} more instructions (colours continue)", size=9, anchor="start")
    return legend


def draw_plan(plan: Tcgen05CpPlan) -> Svg:
    """The plan's TMEM footprint per CTA, coloured by instruction, beside the shared memory each instruction
    reads, with the atom, the partition and the descriptor in the legend."""
    if not isinstance(plan, Tcgen05CpPlan):
        raise TypeError(f"draw_plan: expected a Tcgen05CpPlan (make_tiled_copy), got {type(plan).__name__}")
    cells = list(plan_footprint(plan))
    legend = _legend(plan)
    panels = [_tmem_panel(plan, [c for c in cells if c.cta == cta], cta) for cta in range(plan.cta_group)]
    smem = _smem_panel(plan, cells)
    width = sum(p.width for p in panels) + smem.width + 20 * len(panels) + 10
    height = legend.height + max([p.height for p in panels] + [smem.height]) + 10
    svg = Svg(max(width, legend.width), height, f"tcgen05.cp plan: {plan.atom.ptx}")
    svg.place(legend, 6, 6)
    x: float = 6
    for p in panels:
        svg.place(p, x, legend.height + 6)
        x += p.width + 20
    svg.place(smem, x, legend.height + 6)
    return svg
