"""TMA (``cp.async.bulk.tensor``): global <-> shared tiles through a tensor map (``make_tma_copy``): the largest
legal box, the map's parameters, the instructions and the bytes each mbarrier phase expects."""
from .plan import TensorMapParams, TmaInstruction, TmaOrigin, TmaPlan, TmaPrecondition, TmaTileCoord
from .planner import make_tma_copy
from .retarget import TensorMapField, TensorMapReplace, make_retarget
