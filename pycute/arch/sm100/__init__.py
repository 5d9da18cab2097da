"""Blackwell (sm_100a family) tcgen05: TMEM model, shared-memory descriptor, functional emulator, CUDA emission."""
from .tmem import (ALLOC_COLUMNS, COLUMNS, LANES, TCol, TLane, alloc_columns_for, check_alloc_columns,
                   lane_quadrant, split_address, tmem_address)
from .descriptor import ADDRESS_MASK, SmemDescriptor, SwizzleMode, patch_start_address
from .emulator import Sm100Emulator
