"""The per-plan emulator: the machine and one executor per instruction family (``executors``), the sm_100
emulator that combines them, ``verify(plan)``, which holds any copy plan (or a compiled stream) against its tensors'
layouts, ``check_pipeline``, which model-checks a pipeline plan's protocol, and ``check_fixup``, the split-K / stream-K
fixup's. The PTX interpreter (one thread's
issue stream, whole kernels on the CPU) is ``pycute.interp``."""
from .machine import CtaState, Machine
from .emulator import Sm100Emulator
from .footprint import InstructionCells, plan_footprint
from .pipeline import PipelineCheck, PipelineError, check_pipeline
from .split_k import FixupCheck, FixupError, check_fixup
from .verify import VERIFIERS, run_tmem_copy, verify, verify_plan, verify_tmem_copy
from .fragment import byte_perm, emulate_convert, reference_convert
