"""``tcgen05.ld`` / ``tcgen05.st``: TMEM <-> registers (``make_tmem_copy``): the fewest instructions under a register
cap, or those realising a given fragment (``match``), over the tensor's cells per lane quadrant (``cells``)."""
from .plan import Tcgen05LdStPlan, TmemCopyPlan, TmemLdStInstruction, WarpInstruction
from .planner import make_tmem_copy
