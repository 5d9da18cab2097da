"""The copy family: one sub-package per variant (``tma``: global <-> shared through a tensor map; ``cp_async``:
global -> shared per thread; ``bulk``: flat global <-> shared runs; ``dsmem``: shared -> a peer CTA; ``tcgen05_cp``:
shared memory -> TMEM; ``tcgen05_ldst``: TMEM <-> registers; ``smem_ldst``: registers <-> shared memory, and the
epilogue it closes with a TMA store), each with a ``planner`` and the ``plan`` record it
returns, all following one protocol (``protocol.Plan``), and ``copy_async``, which picks the variant by the tensors'
memory spaces."""
from .protocol import Plan, Reject, Rejection
from .tcgen05_cp import CopyPlan, CpInstruction, DynamicCoord, Smem, Tcgen05CpPlan, expected_tmem, make_tiled_copy
from .tcgen05_ldst import (TmemCopyPlan, TmemLdStInstruction, Tcgen05LdStPlan, WarpInstruction, make_tmem_copy)
from .tma import Multicast, TensorMapParams, TmaPlan, make_tma_copy
from .cp_async import CpAsyncPlan, make_cp_async_copy
from .bulk import BulkPlan, make_bulk_copy
from .dsmem import DsmemPlan, make_dsmem_copy
from .smem_ldst import EpiloguePlan, SmemCopyPlan, make_epilogue, make_smem_copy
from .dispatch import VARIANTS, CopyVariant, copy_async
