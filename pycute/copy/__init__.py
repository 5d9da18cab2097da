"""make_tiled_copy: plan shared-memory -> TMEM tcgen05.cp copies."""
from .plan import CopyPlan, CpInstruction, DynamicCoord
from .planner import Smem, make_tiled_copy
from .reference import expected_tmem
from .tensor import Dynamic, DynamicIndex, SmemTensor, TmemPlacement, TmemTensor, dynamic, make_smem_tensor, make_tmem_tensor
from .alloc import TmemAllocation
from .canonical import atom_tmem_tensor, kmajor_smem_tensor
from .accumulator import accumulator_layout, mma_accumulator
from .tmem_copy import make_tmem_copy
from .tmem_plan import TmemCopyPlan, TmemLdStInstruction, WarpInstruction
