"""Round trips that compile, launch and check a plan's generated code on a GPU (``RoundTrip`` for tcgen05.cp,
``LdStRoundTrip`` for tcgen05.ld/st): above code generation, compilation and emulation, which they combine. The
streaming kernels on pipelines (``stream``, ``stream_load``, ``stream_cp_async``, ``stream_dsmem``), the GEMM feed
rate (``stream_feed``) and the tile scheduler probe (``schedule``) are their own modules."""
from .tcgen05_cp import RoundTrip, Timing, roundtrip_source
from .tcgen05_ldst import LdStRoundTrip
from .cp_async import CpAsyncRoundTrip
from .bulk import BulkRoundTrip, DsmemRoundTrip
