"""The Hopper GEMM with fp8 scales as a torch operation: ``pycute::scaled_gemm(a, b, scale_a, scale_b, kind,
promote, alpha)`` = ``alpha * (sa a) @ (sb b).T`` in bf16 for e4m3 ``a`` (M x K) and ``b`` (N x K) and f32 scales of
the plan's ``kind`` (``mma.fp8_scaling``: ``tensor``, ``row``, ``col``, ``rowcol``, or DeepSeek-V3's ``block``: A's
1 x 128 blocks k-block-major ``(ceil(K / 128), M rounded up to 4)``, B's 128 x 128 blocks ``(ceil(N / 128),
ceil(K / 128))``), the tensor core's partial sums promoted into f32 every ``promote`` k-blocks of 128 (0: never,
all of K in the tensor core). Tiles whole or shared (split-K / stream-K) as ``choose_split`` models best; a custom
op with a fake implementation; on CPU tensors the same kernel through ``pycute.interp`` (small problems)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...errors import LaunchError
from ...mma.fp8_scaling import ScaleKind, make_fp8_scaling
from ...pipeline.split_k import KSplit
from ..launcher import Launcher, current_stream, sm_count, torch_module
from ..tensors import check_cpu_size, from_bits, row_pitch, tma_rows, to_bits
from .config import HopperGemm, choose_split
from .op import _CPU_CTAS, _NO_INPUTS, counters
from .runs import gemm_run

__all__ = ["scaled_gemm", "scaled_candidates"]

torch = torch_module()
_KINDS = ("tensor", "row", "col", "rowcol", "block")


@functools.lru_cache(maxsize=None)
def scaled_candidates(kind: ScaleKind, promote: int | None) -> tuple[HopperGemm, ...]:
    """The configurations for fp8 scales of ``kind`` promoted every ``promote`` k-blocks: promoted, a 128 x 128
    cooperative tile and a 64 x 128 one (a second f32 accumulator fits 64 x 128 per warpgroup); unpromoted, the
    fp8 candidates of the plain GEMM (block scales: those whose BN a 128-column scale block covers or divides)."""
    if promote is not None:
        return (HopperGemm(dtype="e4m3", BN=128, scales=kind, promote=promote),
                HopperGemm(dtype="e4m3", BN=128, consumers=1, stages=3, scales=kind, promote=promote))
    return (HopperGemm(dtype="e4m3", scales=kind), HopperGemm(dtype="e4m3", BN=128, scales=kind),
            HopperGemm(dtype="e4m3", BN=128, consumers=1, stages=3, scales=kind))


def _check(a: Any, b: Any, sa: Any, sb: Any, kind: str, promote: int) -> tuple[int, int, int]:
    for name, t in (("a", a), ("b", b), ("scale_a", sa), ("scale_b", sb)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"scaled_gemm: {name} is a torch tensor, got {type(t).__name__}")
    if a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn or a.dim() != 2 or b.dim() != 2 or \
            a.shape[1] != b.shape[1]:
        raise LaunchError(f"scaled_gemm: a (M x K) and b (N x K) are float8_e4m3fn; got {a.dtype} {tuple(a.shape)} "
                          f"and {b.dtype} {tuple(b.shape)}")
    if kind not in _KINDS or promote < 0:
        raise LaunchError(f"scaled_gemm: kind={kind!r} (one of {', '.join(_KINDS)}) and promote={promote} (k-blocks "
                          f"of 128 per promotion, 0: none)")
    M, K = a.shape
    N = b.shape[0]
    plan = make_fp8_scaling(kind, (128, 128), interval=promote or None)    # type: ignore[arg-type]
    want = (plan.a_scales(M, K), plan.b_scales(N, K))
    if (tuple(sa.shape), tuple(sb.shape)) != want or sa.dtype != torch.float32 or sb.dtype != torch.float32:
        raise LaunchError(f"scaled_gemm: {kind} scales for {M} x {N} x {K} are float32 of shapes {want[0]} and "
                          f"{want[1]}; got {sa.dtype} {tuple(sa.shape)} and {sb.dtype} {tuple(sb.shape)}")
    if len({a.device, b.device, sa.device, sb.device}) > 1:
        raise LaunchError("scaled_gemm: a, b and the scales are on different devices")
    return M, N, K


def _config(M: int, N: int, K: int, kind: str, promote: int, sms: int) -> Any:
    return choose_split(M, N, K, "e4m3", sms, among=list(scaled_candidates(kind, promote or None)))


def _cuda(a: Any, b: Any, sa: Any, sb: Any, kind: str, promote: int, alpha: float) -> Any:
    M, N, K = _check(a, b, sa, sb, kind, promote)
    device = a.device.index
    sms = sm_count(device)
    g, split = _config(M, N, K, kind, promote, sms)
    run = gemm_run(g)
    a, b = tma_rows(a), tma_rows(b)
    pitch = row_pitch(N, 2)
    d = torch.empty((M, pitch), dtype=torch.bfloat16, device=a.device)
    launch = run.launch(M, N, K, split, sms * g.ctas_per_sm)
    ws, ctr = 0, 0
    if launch.counters:
        ws = torch.empty(launch.workspace_bytes // 4, dtype=torch.float32, device=a.device).data_ptr()
        ctr = counters(device, current_stream(device), launch.counters).data_ptr()
    Launcher.of(g, device)(launch.grid, run.map_a.encode(a, "scaled_gemm: a"), run.map_b.encode(b, "scaled_gemm: b"),
                           run.map_d.encode(d, "scaled_gemm: D"), M, N, K, float(alpha), ws, ctr, split.dp,
                           split.workers, sa.contiguous().data_ptr(), sb.contiguous().data_ptr(), _NO_INPUTS)
    return d if pitch == N else d[:, :N]


def _cpu(a: Any, b: Any, sa: Any, sb: Any, kind: str, promote: int, alpha: float,
         choice: tuple[HopperGemm, KSplit] | None = None) -> Any:
    """The CPU run: ``choose_split``'s configuration and partition, or ``choice``."""
    from ...interp import run_kernel, tensor_map
    M, N, K = _check(a, b, sa, sb, kind, promote)
    check_cpu_size("scaled_gemm", M * N * K)
    g, split = choice or _config(M, N, K, kind, promote, 132)
    run = gemm_run(g)
    unit = row_pitch(K, 1)
    maps = []
    for spec, t in ((run.map_a, a), (run.map_b, b)):
        bits = np.zeros((t.shape[0], unit), np.uint8)
        bits[:, :K] = to_bits(t)
        maps.append(tensor_map(spec.params_for(tuple(bits.shape), (unit, 1)), bits))
    pitch = row_pitch(N, 2)
    d = np.full((M, pitch), 0x7FC0, np.uint16)
    maps.append(tensor_map(run.map_d.params_for((M, pitch), (pitch, 1)), d))
    shape = g.launch_shape
    launch = run.launch(M, N, K, split, _CPU_CTAS * shape.cluster_size)
    ws = np.full(max(1, launch.workspace_bytes // 4), np.nan, np.float32)
    ctr = np.zeros(max(1, launch.counters), np.uint32)
    run_kernel(g.compile(), shape.entry, grid=launch.grid, block=shape.threads, cluster=shape.cluster,
               smem=shape.smem_bytes, args=[*maps, M, N, K, float(alpha), ws, ctr, split.dp, split.workers,
                                            sa.detach().contiguous().numpy().reshape(-1),
                                            sb.detach().contiguous().numpy().reshape(-1), _NO_INPUTS])
    return from_bits(d, torch.bfloat16)[:, :N]


@torch.library.custom_op("pycute::scaled_gemm", mutates_args=(),
                         schema="(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, str kind='tensor', "
                                "int promote=1, float alpha=1.0) -> Tensor")
def _op(a: Any, b: Any, scale_a: Any, scale_b: Any, kind: str = "tensor", promote: int = 1,
        alpha: float = 1.0) -> Any:
    if a.is_cuda:
        return _cuda(a, b, scale_a, scale_b, kind, promote, alpha)
    if a.device.type == "cpu":
        return _cpu(a, b, scale_a, scale_b, kind, promote, alpha)
    raise LaunchError(f"scaled_gemm: no implementation on {a.device}")


@_op.register_fake
def _fake(a: Any, b: Any, scale_a: Any, scale_b: Any, kind: str = "tensor", promote: int = 1,
          alpha: float = 1.0) -> Any:
    M, N, _ = _check(a, b, scale_a, scale_b, kind, promote)
    return a.new_empty((M, row_pitch(N, 2)), dtype=torch.bfloat16)[:, :N]


def scaled_gemm(a: Any, b: Any, scale_a: Any, scale_b: Any, kind: str = "tensor", promote: int = 1,
                alpha: float = 1.0) -> Any:
    """``alpha * (scale_a a) @ (scale_b b).T`` in bf16: e4m3 ``a`` (M x K) and ``b`` (N x K), f32 scales of
    ``kind`` (module docstring for their shapes), partial sums promoted into f32 every ``promote`` k-blocks of 128
    (0: never)."""
    if type(a) is torch.Tensor and a.is_cuda and not torch.compiler.is_compiling():
        with torch.cuda.device(a.device):
            return _cuda(a, b, scale_a, scale_b, kind, promote, alpha)
    return torch.ops.pycute.scaled_gemm(a, b, scale_a, scale_b, kind, promote, alpha)
