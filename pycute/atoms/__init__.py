"""Copy atoms: the CopyAtom base and one class per tcgen05.cp PTX form, plus the tcgen05.ld/st atoms."""
from .base import CopyAtom
from .tcgen05_cp import (LEGAL_MULTICASTS, TCGEN05_CP_ATOMS, TCGEN05_CP_FORMS, Cp4x256b, Cp32x128bWarpx4,
                         Cp64x128bWarpx2_01_23, Cp64x128bWarpx2_02_13, Cp128x128b, Cp128x256b, Tcgen05CpAtom,
                         cp_candidates, find_cp_atom, parse_cp_ptx)
from .tcgen05_ld import TMEM_LDST_SHAPES, TmemLoadAtom, TmemStoreAtom
