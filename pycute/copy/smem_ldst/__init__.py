"""Registers <-> shared memory (``make_smem_copy``): a register fragment (a CuTe thread-value layout) into a shared
tile of any swizzle with ``stmatrix`` or ``st.shared`` (converting f32 to the tile's type on the way), and back with
``ldmatrix`` or ``ld.shared``; the form of the fewest bank-conflict wavefronts, then the fewest instructions."""
from .plan import Candidate, SmemCopyPlan, SmemInstruction
from .planner import make_smem_copy
from .epilogue import EpiloguePlan, make_epilogue, tma_arguments
