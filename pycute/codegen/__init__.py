"""CUDA C++ text, one emitter per copy variant (``tcgen05_cp``, ``tcgen05_ldst``: ``plan.cuda()``), the headers
under ``include_dir()`` (``header``: ``pycute/sm100.cuh`` and its parts), and the probe kernels that SASS checks
and the PTX interpreter read (``probe``). The C++ itself lives in ``templates/`` as package data."""
from .common import ABI_VERSION, check_function_name
from .tcgen05_cp import commit_asm, emit_device_function, emit_helpers, helper_name
from .tcgen05_ldst import emit_tmem_copy, ldst_helper
from .tma import emit_tma_copy, tma_helper
from .tma_modes import emit_gather4, emit_im2col_copy, emit_im2col_w_copy, im2col_helper
from .cp_async import cp_async_helper, emit_cp_async_copy
from .bulk import emit_bulk_copy, emit_dsmem_copy
from .smem_ldst import emit_smem_copy, matrix_helper, vector_helper
from .epilogue import emit_epilogue
from .pipeline import emit_pipeline
from .scheduler import emit_clc_scheduler, emit_tile_scheduler
from .turns import emit_turns
from .split_k import emit_split_k_scheduler
from .grouped import emit_grouped_scheduler
from .fp8_scaling import emit_fp8_scaling
from .mainloop import emit_mma_mainloop
from .accumulator import emit_accumulator_epilogue
from .convention import read_conventions
from .mma import emit_instr_desc, emit_mma, emit_umma_desc, mma_helper
from .wgmma import emit_gmma_desc, emit_wgmma, wgmma_header
from .fragment import emit_fragment_coords
from .header import header_path, headers, include_dir, sm100_header
from .probe import PROBE_SHARED_SYMBOL, ldst_probe_source, no_call_probe_source, probe_entry, probe_source
