"""Copy atoms, one module per instruction form, built from the ``arch`` tables: the ``tcgen05.cp`` forms
(``tcgen05_cp``) and the ``tcgen05.ld`` / ``tcgen05.st`` shapes (``tcgen05_ldst``), each with the issue record a
plan streams and the PTX interpreter reads back."""
from .base import CopyAtom
from .tcgen05_cp import (LEGAL_MULTICASTS, TCGEN05_CP_ATOMS, TCGEN05_CP_FORMS, Cp4x256b, Cp32x128bWarpx4,
                         Cp64x128bWarpx2_01_23, Cp64x128bWarpx2_02_13, Cp128x128b, Cp128x256b, Tcgen05CpAtom,
                         Tcgen05CpIssue, atom_tmem_tensor, cp_candidates, find_cp_atom, parse_cp_ptx)
from .tcgen05_ldst import Tcgen05LdStIssue, TmemLoadAtom, TmemStoreAtom, ldst_atom, tmem_ldst_atoms
