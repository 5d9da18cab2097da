"""TMA (``cp.async.bulk.tensor``): global <-> shared tiles through a tensor map (``make_tma_copy``): the largest
legal box, the map's parameters, the instructions and the bytes each mbarrier phase expects."""
from .plan import TensorMapParams, TmaInstruction, TmaOrigin, TmaPlan, TmaPrecondition, TmaTileCoord
from .multicast import Multicast
from .planner import make_tma_copy
from .retarget import TensorMapField, TensorMapReplace, make_retarget
from .conv import ConvProblem, im2col_reference
from .im2col import Im2colMapParams, Im2colPlan, make_im2col_copy
from .modes100 import Gather4Plan, Im2colWPlan, make_im2col_w_copy, make_tma_gather4
