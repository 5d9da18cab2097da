"""Feeding tcgen05.mma: operand descriptors from layouts (``make_umma_desc``), the instruction descriptor
(``make_instr_desc``), block-scale factors where the MMA reads them (``scale_factor_tensor``), the accumulator's
TMEM tensor (``mma_accumulator``), an A in TMEM (``make_tmem_operand``), and the MMA as a plan (``make_mma``)."""
from .accumulator import accumulator_layout, mma_accumulator
from .instr import InstrDescriptor, make_instr_desc
from .operand import UmmaDescriptor, make_umma_desc
from .scale import ScaleFactorTensor, check_scale_factor_copy, scale_factor_smem, scale_factor_tensor
from .tmem_operand import TmemOperand, make_tmem_operand
from .plan import MmaInstruction, MmaPlan
from .planner import make_mma
