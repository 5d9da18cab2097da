"""cp.async (LDGSTS): a global array's tile into shared memory by a group of threads, each moving 4, 8 or 16 bytes
per instruction (``make_cp_async_copy``): the widest vector both layouts allow, the thread-value partition,
zero-filled out-of-bounds elements, and the completion the caller chooses."""
from .plan import CpAsyncInstruction, CpAsyncPlan, Terms
from .planner import make_cp_async_copy
