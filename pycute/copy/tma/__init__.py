"""TMA (``cp.async.bulk.tensor``): global <-> shared tiles through a tensor map (``make_tma_copy``): the largest
legal box, the map's parameters, the instructions and the bytes each mbarrier phase expects."""
from .plan import TensorMapParams, TmaInstruction, TmaPlan, TmaTileCoord
from .multicast import Multicast
from .planner import make_tma_copy
