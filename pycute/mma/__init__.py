"""Feeding tcgen05.mma: operand descriptors from layouts (``make_umma_desc``), the instruction descriptor
(``make_instr_desc``), block-scale factors where the MMA reads them (``scale_factor_tensor``), the accumulator's
TMEM tensor (``mma_accumulator``), an A in TMEM (``make_tmem_operand``), and the MMA as a plan (``make_mma``).
Hopper's wgmma beside it: the sm_90 descriptor (``make_gmma_desc``), the register fragments (``wgmma_accumulator``,
``wgmma_a_fragment``) and the plan (``make_mma`` with a register accumulator: ``WgmmaPlan``), and fp8 scaling with
its promotion interval (``make_fp8_scaling``). Between MMAs, in registers: reductions along a fragment's rows
(``make_reduction``) and the accumulator converted into the next MMA's A fragment (``make_fragment_convert``)."""
from .accumulator import accumulator_layout, mma_accumulator
from .instr import InstrDescriptor, make_instr_desc
from .operand import UmmaDescriptor, make_umma_desc
from .scale import ScaleFactorTensor, check_scale_factor_copy, scale_factor_smem, scale_factor_tensor
from .tmem_operand import TmemOperand, make_tmem_operand
from .plan import MmaInstruction, MmaPlan
from .planner import make_mma
from .gmma_operand import GmmaDescriptor, make_gmma_desc
from .wgmma_fragment import wgmma_a_fragment, wgmma_accumulator
from .wgmma_plan import WgmmaInstruction, WgmmaPlan
from .wgmma_planner import make_wgmma
from .fp8_scaling import Fp8Scaling, ScaleKind, make_fp8_scaling
from .reduce import ReducePlan, make_reduction
from .convert import FragmentConvertPlan, make_fragment_convert
