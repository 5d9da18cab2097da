"""The Hopper GEMM as a torch operation: ``pycute::gemm(a, b, scale)`` = ``scale * a @ b.T`` in bf16, a custom op
(``torch.library``) with a fake implementation, so that ``torch.compile(fullgraph=True)`` traces it; on CUDA tensors
the compiled kernel launched on torch's current stream (``Launcher``), on CPU tensors the very same compiled kernel
run thread by thread by ``pycute.interp.run_kernel`` (exact and slow: small problems only).

``gemm`` is the call: in eager mode it goes straight to the launch (a cached call spends a few microseconds on the
host: the configuration, the grid and the tensor maps of a problem seen before are dictionary lookups), under
``torch.compile`` it is the op. Importing this module imports torch and registers the op."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ...errors import LaunchError
from ...pipeline.split_k import KSplit
from ..launcher import Launcher, current_stream, torch_module
from ..tensor_maps import TensorMapSpec
from ..tensors import check_cpu_size, from_bits, row_pitch, tma_rows, to_bits
from .config import HopperGemm, choose_split
from .plans import Dtype

__all__ = ["gemm", "GemmRun", "Launch", "gemm_run", "config_for", "counters"]

torch = torch_module()
_DTYPES: dict[Any, Dtype] = {torch.bfloat16: "bf16", torch.float8_e4m3fn: "e4m3"}
_CPU_CTAS = 2             # CTAs (whole clusters) a CPU run launches: each walks its share of the tiles


@attrs.frozen
class Launch:
    """What a launch of a configuration on a problem needs besides its tensors: the grid, the partition (split-K /
    stream-K: a ``KSplit``), the workspace bytes of the partials and the fixup's counters (zero when whole)."""

    grid: int
    split: KSplit
    workspace_bytes: int
    counters: int


@attrs.frozen(eq=False)
class GemmRun:
    """What a configuration's launches share: its tensor-map specs, its scheduler and the launches of the problems
    seen (a dictionary: the scheduler's model is asked once per problem)."""

    config: HopperGemm
    map_a: TensorMapSpec
    map_b: TensorMapSpec
    map_d: TensorMapSpec
    _launches: dict = attrs.field(factory=dict)

    def launch(self, M: int, N: int, K: int, split: KSplit, ctas: int) -> Launch:
        """The launch of ``M x N x K`` shared as ``split`` on ``ctas`` SMs x CTAs per SM (whole clusters, no more
        than the work items)."""
        g = self.config
        key = (M, N, K, split, ctas)
        found = self._launches.get(key)
        if found is None:
            model = g.plans.sched.at((-(-M // g.BM), -(-N // g.BN)), -(-K // g.BK), split)
            found = self._launches[key] = Launch(model.grid(ctas), split, model.workspace_bytes, model.counters)
        return found


_runs: dict[HopperGemm, GemmRun] = {}
_configs: dict[tuple, tuple[HopperGemm, KSplit]] = {}
_sms: dict[int, int] = {}
_counters: dict[tuple[int, int], Any] = {}


def gemm_run(config: HopperGemm) -> GemmRun:
    """The configuration's ``GemmRun`` (made once)."""
    run = _runs.get(config)
    if run is None:
        a, b, d = (TensorMapSpec.of(m) for m in config.plans.maps())
        run = _runs[config] = GemmRun(config, a, b, d)
    return run


def config_for(M: int, N: int, K: int, dtype: Dtype, sms: int) -> tuple[HopperGemm, KSplit]:
    """``choose_split``'s configuration and partition for the problem (remembered)."""
    key = (M, N, K, dtype, sms)
    found = _configs.get(key)
    if found is None:
        found = _configs[key] = choose_split(M, N, K, dtype, sms)
    return found


def counters(device: int, stream: int, count: int) -> Any:
    """Zeroed ``u32`` fixup counters for launches on ``stream`` (at least ``count``): kept per stream and left zero
    by every launch (the last arrival resets its counter), so a call costs no memset and a CUDA graph may capture
    it; launches on one stream never overlap."""
    key = (device, stream)
    buf = _counters.get(key)
    if buf is None or buf.numel() < count:
        buf = _counters[key] = torch.zeros(max(count, 1024), dtype=torch.int32, device=f"cuda:{device}")
    return buf


def _check(a: Any, b: Any) -> tuple[int, int, int, Dtype]:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"gemm: a and b are torch tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise LaunchError(f"gemm: a is M x K and b is N x K (D = a @ b.T); got {tuple(a.shape)} and "
                          f"{tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in _DTYPES:
        raise LaunchError(f"gemm: a and b are both bfloat16 or both float8_e4m3fn; got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise LaunchError(f"gemm: a is on {a.device} and b on {b.device}")
    M, K = a.shape
    if M == 0 or K == 0 or b.shape[0] == 0:
        raise LaunchError(f"gemm: an empty problem {M} x {b.shape[0]} x {K}")
    return M, b.shape[0], K, _DTYPES[a.dtype]


def _sm_count(device: int) -> int:
    n = _sms.get(device)
    if n is None:
        n = _sms[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return n


def _check_out(out: Any, M: int, N: int, device: Any) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"gemm: out is a torch tensor, got {type(out).__name__}")
    if out.dtype != torch.bfloat16 or tuple(out.shape) != (M, N) or out.device != device:
        raise LaunchError(f"gemm: out must be a {M} x {N} bfloat16 tensor on {device}; got {tuple(out.shape)} "
                          f"{out.dtype} on {out.device}")
    if N * 2 % 16:
        raise LaunchError(f"gemm: out's rows are {N} bf16 = {N * 2} B; a TMA store writes whole 16-byte units and "
                          f"would write past column {N} of out (leave out=None: D is then padded for you)")


def _gemm_cuda(a: Any, b: Any, scale: float, out: Any = None) -> Any:
    M, N, K, dtype = _check(a, b)
    device = a.device.index
    sms = _sm_count(device)
    g, split = config_for(M, N, K, dtype, sms)
    run = gemm_run(g)
    a, b = tma_rows(a), tma_rows(b)
    if out is None:
        pitch = row_pitch(N, 2)
        d = torch.empty((M, pitch), dtype=torch.bfloat16, device=a.device)  # the store's map covers the pad
    else:                                                               # checked by gemm()
        pitch, d = N, out
    launch = run.launch(M, N, K, split, sms * g.ctas_per_sm)
    ws, ctr = 0, 0
    if launch.counters:
        ws = torch.empty(launch.workspace_bytes // 4, dtype=torch.float32, device=a.device).data_ptr()
        ctr = counters(device, current_stream(device), launch.counters).data_ptr()
    Launcher.of(g, device)(launch.grid, run.map_a.encode(a, "gemm: a"), run.map_b.encode(b, "gemm: b"),
                           run.map_d.encode(d, "gemm: out" if out is not None else "gemm: D"), M, N, K, float(scale),
                           ws, ctr, split.dp, split.workers, 0, 0)
    return d if pitch == N else d[:, :N]


def _gemm_cpu(a: Any, b: Any, scale: float, choice: tuple[HopperGemm, KSplit] | None = None) -> Any:
    """The CPU run: ``choose_split``'s configuration and partition, or ``choice``."""
    from ...interp import run_kernel, tensor_map
    M, N, K, dtype = _check(a, b)
    check_cpu_size("gemm", M * N * K)
    g, split = choice or config_for(M, N, K, dtype, 132)
    run = gemm_run(g)
    unit = row_pitch(K, a.element_size())
    maps = []
    for spec, t in ((run.map_a, a), (run.map_b, b)):
        bits = np.zeros((t.shape[0], unit), np.uint16 if t.element_size() == 2 else np.uint8)
        bits[:, :K] = to_bits(t)
        maps.append(tensor_map(spec.params_for(tuple(bits.shape), (unit, 1)), bits))
    pitch = row_pitch(N, 2)
    d = np.full((M, pitch), 0x7FC0, np.uint16)                                # NaN: every element is written
    maps.append(tensor_map(run.map_d.params_for((M, pitch), (pitch, 1)), d))
    shape = g.launch_shape
    launch = run.launch(M, N, K, split, _CPU_CTAS * shape.cluster_size)
    ws = np.full(max(1, launch.workspace_bytes // 4), np.nan, np.float32)
    ctr = np.zeros(max(1, launch.counters), np.uint32)
    run_kernel(g.compile(), shape.entry, grid=launch.grid, block=shape.threads, cluster=shape.cluster,
               smem=shape.smem_bytes, args=[*maps, M, N, K, float(scale), ws, ctr, split.dp, split.workers,
                                            np.zeros(1, np.float32), np.zeros(1, np.float32)])
    return from_bits(d, torch.bfloat16)[:, :N]


@torch.library.custom_op("pycute::gemm", mutates_args=(), schema="(Tensor a, Tensor b, float scale=1.0) -> Tensor")
def _gemm_op(a: Any, b: Any, scale: float = 1.0) -> Any:
    if a.is_cuda:
        return _gemm_cuda(a, b, scale)
    if a.device.type == "cpu":
        return _gemm_cpu(a, b, scale)
    raise LaunchError(f"gemm: no implementation on {a.device}")


@_gemm_op.register_fake
def _gemm_fake(a: Any, b: Any, scale: float = 1.0) -> Any:
    M, N, _, _ = _check(a, b)
    pitch = row_pitch(N, 2)
    return a.new_empty((M, pitch), dtype=torch.bfloat16)[:, :N]


def gemm(a: Any, b: Any, scale: float = 1.0, *, out: Any = None) -> Any:
    """``scale * a @ b.T`` in bf16 (f32 accumulation): ``a`` M x K and ``b`` N x K, both bfloat16 or both
    float8_e4m3fn, on one CUDA device (or small ones on the CPU, exact, through the interpreter). Any M, N, K; rows
    that TMA cannot read as they are (a stride other than 1 along K, a pitch not in whole 16-byte units) are copied
    first. D's rows are padded to whole 16-byte units when N is not (a view). ``out``: an M x N bf16 tensor to write
    (rows of whole 16-byte units), returned."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"gemm: a and b are torch tensors, got {type(a).__name__} and {type(b).__name__}")
    if out is not None:
        _check_out(out, a.shape[0], b.shape[0], a.device)
    if type(a) is torch.Tensor and a.is_cuda and not torch.compiler.is_compiling():
        if a.device.index == torch.cuda.current_device():
            return _gemm_cuda(a, b, scale, out)
        with torch.cuda.device(a.device):
            return _gemm_cuda(a, b, scale, out)
    d = torch.ops.pycute.gemm(a, b, scale)
    return d if out is None else out.copy_(d)
