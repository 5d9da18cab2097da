"""Compiling generated CUDA: NVRTC to sm_100a cubins, an on-disk cache, SASS inspection, a PTX interpreter for the
issue path, and an optional GPU runtime (used only where a CUDA driver is present)."""
from .cache import CompileCache, default_cache_dir
from .nvrtc import ARCHES, Compiled, compile_cuda, nvrtc_version
from .sass import disassemble, function_instructions, opcode_histogram, sass_instructions, utccp_instructions
