"""CUDA C++ generation: the device function a user composes (``plan.cuda()``), the protocol header
``pycute/sm100.cuh`` (``include_dir()``), and the probe and round-trip test kernels; the C++ itself lives in
``templates/`` as package data."""
from .emit import commit_asm, emit_device_function, emit_helpers, helper_name
from .header import ABI_VERSION, header_path, include_dir, sm100_header
from .ldst import emit_tmem_copy
from .kernels import (PROBE_SHARED_SYMBOL, RoundTrip, Timing, no_call_probe_source, probe_entry, probe_source,
                      roundtrip_source)
