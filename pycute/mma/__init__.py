"""Feeding tcgen05.mma: operand descriptors from layouts (``make_umma_desc``), the instruction descriptor
(``make_instr_desc``), block-scale factors where the MMA reads them (``scale_factor_tensor``), and the accumulator's
TMEM tensor (``mma_accumulator``)."""
from .accumulator import accumulator_layout, mma_accumulator
from .instr import InstrDescriptor, make_instr_desc
from .operand import UmmaDescriptor, make_umma_desc
from .scale import ScaleFactorTensor, check_scale_factor_copy, scale_factor_smem, scale_factor_tensor
from .plan import MmaInstruction, MmaPlan
from .planner import make_mma
