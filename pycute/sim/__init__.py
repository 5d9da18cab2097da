"""Execution models: the machine and one executor per instruction family (``executors``), the sm_100 emulator that
combines them, the PTX interpreter for generated issue code, and ``verify(plan)``, which holds any copy plan (or a
compiled stream) against its tensors' layouts, and ``check_pipeline``, which model-checks a pipeline plan's protocol."""
from .machine import CtaState, Machine
from .emulator import Sm100Emulator
from .footprint import InstructionCells, plan_footprint
from .ptx import GENERIC_SHARED_WINDOW, ISSUE_DECODERS, probe_stream, run_entry
from .pipeline import PipelineCheck, PipelineError, check_pipeline
from .verify import VERIFIERS, run_tmem_copy, verify, verify_plan, verify_tmem_copy
# whole kernels on the CPU: every CTA and thread of a small grid (docs/interpreter.md)
from .kernel.launch import KernelRun, TensorMapArg, run_kernel, tensor_map
from .kernel.report import DeadlockError
from .kernel.shadow import RaceError
from .kernel.sync import BarrierError
from .kernel.conventions import ConventionError
from .kernel.warpgroup import WgmmaError
