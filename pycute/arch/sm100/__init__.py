"""Blackwell (sm_100a family) tcgen05 hardware facts, as data: TMEM geometry and addresses, the shared-memory
descriptor's fields, the swizzle modes, the tcgen05.cp forms and the tcgen05.ld/st shapes."""
from .tmem import (ALLOC_COLUMNS, CELL_BITS, COLUMNS, LANE_SHIFT, LANES, QUADRANT_LANES, TCol, TLane,
                   alloc_columns_for, check_alloc_columns, lane_quadrant, split_address, tmem_address)
from .smem import SMEM_MAX_BYTES
from .swizzle_modes import UNIT_BITS, UNIT_BYTES, SwizzleMode
from .descriptor import ADDRESS_MASK, FIELDS, DescriptorField, SmemDescriptor, patch_start_address
from .cp_forms import CP_FORMS, CTA_GROUPS, DECOMPRESSIONS, LEGAL_MULTICASTS, PAIR_CTA_MASK, CpForm, commit_ptx
from .ldst_shapes import LDST_SHAPES, LdStShape
