"""``tcgen05.cp``: shared memory -> TMEM (``make_tiled_copy``): the widest legal atom, its descriptor and the
instructions, with the rules (``rules``) each rejected form broke; ``reference.expected_tmem`` is the oracle."""
from .plan import CopyPlan, CpInstruction, DynamicCoord, Tcgen05CpPlan
from .planner import Smem, make_tiled_copy
from .reference import expected_tmem
