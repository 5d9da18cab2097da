"""Blackwell (sm_100a family) tcgen05 hardware facts, as data: TMEM geometry and addresses (``tmem``), the
shared-memory descriptor's fields (``descriptor``), the swizzle modes, the tcgen05.cp forms (``tcgen05_cp``), the
tcgen05.ld/st shapes (``tcgen05_ldst``), the MMA kinds (``mma``) and the targets that have tcgen05 (``targets``)."""
from .tmem import (ALLOC_COLUMNS, CELL_BITS, COLUMNS, CTA_GROUPS, LANE_SHIFT, LANES, QUADRANT_LANES, TCol, TLane,
                   alloc_columns_for, check_alloc_columns, check_cta_group, lane_quadrant, split_address, tmem_address)
from .smem import SMEM_MAX_BYTES
from .swizzle_modes import UNIT_BITS, UNIT_BYTES, SwizzleMode
from .descriptor import ADDRESS_MASK, FIELDS, DescriptorField, SmemDescriptor, patch_start_address
from .tcgen05_cp import CP_FORMS, DECOMPRESSIONS, LEGAL_MULTICASTS, PAIR_CTA_MASK, CpForm, commit_ptx
from .tcgen05_ldst import LDST_SHAPES, LdStShape
from .targets import TCGEN05_TARGETS
