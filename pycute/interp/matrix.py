"""The warp-collective matrix moves in a whole-kernel run: ``stmatrix`` and ``ldmatrix`` (PTX ISA #warp-level-matrix-
store-instruction-stmatrix, #warp-level-matrix-load-instruction-ldmatrix). Every lane of the warp executes one
(``.sync.aligned``); the move runs once all 32 have reached it, through the emulator's executor
(``sim.executors.smem_ldst``), with the registers of every lane: ``stmatrix`` stores lane ``t``'s registers into
the rows other lanes address, ``ldmatrix`` fills each lane's destination registers. For the race checks each byte
is the access of the lane whose register it comes from (goes to). ``ld.shared`` / ``st.shared`` are per-thread
loads and stores (``memory``)."""
from __future__ import annotations

import numpy as np

from ..arch.sm100.matrix import UNPACK_FORMATS, b8_forms, unpack_forms
from ..arch.sm90.matrix import ROW_BYTES, m8n8_forms
from ..atoms.smem_ldst import SmemMatrixAtom
from ..errors import EmulationError
from ..sim.executors.smem_ldst import _byte_targets
from .rtemit_sync import KERNEL_EXECUTORS

__all__ = ["matrix_atom"]

_FORMS = {f.ptx: f for op in ("st", "ld") for f in m8n8_forms(op) + b8_forms(op)} | \
    {f.ptx: f for fmt in UNPACK_FORMATS for f in unpack_forms(fmt)}


def matrix_atom(ptx: str) -> SmemMatrixAtom:
    """The stmatrix / ldmatrix form a compiled opcode spells (``.shared::cta`` is ``.shared``)."""
    form = _FORMS.get(ptx.replace(".shared::cta", ".shared"))
    if form is None:
        raise EmulationError(f"{ptx}: not a stmatrix / ldmatrix form pycute models")
    return SmemMatrixAtom(form)


def _lane_bytes(atom: SmemMatrixAtom, addresses: np.ndarray, base: int) -> np.ndarray:
    """``(32, n)``: the shared bytes each lane's registers move (an unpacking load: its rows' packed bytes, by the
    lane that addresses the row)."""
    if atom.form.unpack:
        _, packed = UNPACK_FORMATS[str(atom.form.unpack)]
        rows = addresses[atom.form.row_lane()] - base
        out = np.full((32, packed * -(-rows.size // 32)), -1, dtype=np.int64)
        for r, lane in enumerate(atom.form.row_lane()):
            out[lane % 32, (r // 32) * packed:(r // 32 + 1) * packed] = rows[r] + np.arange(packed)
        return out
    return _byte_targets(atom, addresses).reshape(32, -1) - base


def _matrix(cta, warp, site, group: dict) -> None:
    if len(group) != 32:
        raise EmulationError(f"{site.text!r}: every lane of warp {warp.index} executes {site.kind} (.sync.aligned); "
                             f"lanes {sorted(set(range(32)) - set(group))} did not")
    records = {lane: g[2][0] for lane, g in group.items()}
    atom = matrix_atom(records[0].ptx)
    addresses = np.array([records[lane].address for lane in range(32)], dtype=np.int64)
    machine = cta.cluster.machine
    base = machine.ctas[cta.rank].smem_base
    touched = _lane_bytes(atom, addresses, base)
    if touched.size and (touched.max() >= cta.smem.size or touched[touched >= 0].min() < 0):
        raise EmulationError(f"{site.text!r}: rows outside {cta.name}'s {cta.smem.size} B of shared memory")
    store = atom.op == "st"
    for lane in range(32):
        idx = touched[lane][touched[lane] >= 0]
        cta.shadow.access(group[lane][0], idx, store, cta.world.check_unwritten)
    if store:
        regs = np.array([records[lane].data for lane in range(32)], dtype=np.uint32)
        machine.smem_store(atom, addresses, regs, cta.rank)
        return
    values = machine.smem_load(atom, addresses, cta.rank)
    for lane in range(32):
        th, s, _, _ = group[lane]
        for slot, v in zip(s.dests, values[lane]):
            if slot is not None:
                th.R[slot] = int(v)


KERNEL_EXECUTORS.update({"stmatrix": (_matrix, True), "ldmatrix": (_matrix, True)})
