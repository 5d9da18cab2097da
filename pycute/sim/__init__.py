"""Execution models: the bit-exact tcgen05 emulator, the PTX interpreter for generated issue code, and the check
of a plan (or of a compiled stream) against the layouts."""
from .emulator import CtaState, Sm100Emulator
from .footprint import InstructionCells, plan_footprint
from .ptx import GENERIC_SHARED_WINDOW, probe_stream, run_entry
from .verify import run_tmem_copy, verify_plan, verify_tmem_copy
