"""The grouped GEMM as a torch operation: ``pycute::grouped_mm(a, b, offs, counts)``, one launch over a mixture of
experts' groups whose sizes stay on the device.

* offsets form (``torch._grouped_mm``'s): ``a`` ``(T, K)``, ``b`` ``(G, N, K)``, ``offs`` int32 ``(G,)`` cumulative
  ends (group ``g`` is rows ``offs[g - 1]..offs[g]`` of ``a``) -> ``(T, N)``; rows past ``offs[-1]`` are not written;
* counts form (a padded batch): ``a`` ``(G, M_max, K)``, ``counts`` int32 ``(G,)`` -> ``(G, M_max, N)`` whose rows
  past each group's count are not written.

bf16 operands, f32 accumulation, bf16 output; ``b`` K-major (``b[g]`` is ``N x K``, as ``torch._grouped_mm``'s
``mat_b.transpose(-2, -1)``). A custom op with a fake implementation; CPU tensors run the same kernel through
``pycute.interp`` (small problems)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import LaunchError
from ..launcher import Launcher, torch_module
from ..tensor_maps import TensorMapSpec
from ..tensors import check_cpu_size, from_bits, row_pitch, to_bits
from .config import MAP_BYTES, GroupedGemm, grouped_candidates

__all__ = ["grouped_mm", "choose_grouped"]

torch = torch_module()
_sms: dict[int, int] = {}
_specs: dict[GroupedGemm, tuple[TensorMapSpec, ...]] = {}
_CPU_CTAS = 2


def choose_grouped(T: int, G: int, N: int, form: str) -> GroupedGemm:
    """A configuration for ``T`` rows in ``G`` groups (the host knows only their total): 128 x 256 tiles when the
    average group fills whole tiles and N is wide, 128 x 64 when the tiles along N alone cannot fill the GPU, else
    128 x 128 with B multicast over a cluster of two."""
    clustered, wide, narrow = grouped_candidates(form)
    if T / max(G, 1) >= 256 and N >= 2048:
        return wide
    if G * -(-N // 128) < 132:
        return narrow
    return clustered


def _specs_of(g: GroupedGemm) -> tuple[TensorMapSpec, ...]:
    found = _specs.get(g)
    if found is None:
        found = _specs[g] = tuple(TensorMapSpec.of(m) for m in g.plans.maps())
    return found


def _check(a: Any, b: Any, groups: Any, counts_form: bool) -> tuple[int, int, int, int, int]:
    """``(rows of a's 2-D view, G, N, K, extent)``: the extent is the rows (offsets) or M_max (counts)."""
    for name, t in (("a", a), ("b", b), ("groups", groups)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"grouped_mm: {name} is a torch tensor, got {type(t).__name__}")
    if b.dim() != 3 or a.dim() != (3 if counts_form else 2) or a.shape[-1] != b.shape[-1]:
        raise LaunchError(f"grouped_mm: a is (T, K) with offs or (G, M_max, K) with counts, b (G, N, K); got "
                          f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != torch.bfloat16 or b.dtype != torch.bfloat16:
        raise LaunchError(f"grouped_mm: a and b are bfloat16, got {a.dtype} and {b.dtype}")
    G, N, K = b.shape
    if groups.dtype != torch.int32 or tuple(groups.shape) != (G,) or (counts_form and a.shape[0] != G):
        raise LaunchError(f"grouped_mm: the group sizes are int32 of shape ({G},) for b's {G} groups; got "
                          f"{groups.dtype} {tuple(groups.shape)}" + (f" with a's {a.shape[0]}" if counts_form else ""))
    if (K * 2) % 16 or (N * 2) % 16:
        raise LaunchError(f"grouped_mm: K={K} and N={N} whole 16-byte rows (multiples of 8): TMA's stride rule")
    if len({a.device, b.device, groups.device}) > 1:
        raise LaunchError("grouped_mm: a, b and the group sizes are on different devices")
    rows = a.shape[0] * a.shape[1] if counts_form else a.shape[0]
    return rows, G, N, K, (a.shape[1] if counts_form else a.shape[0])


def _cuda(a: Any, b: Any, groups: Any, counts_form: bool) -> Any:
    rows, G, N, K, extent = _check(a, b, groups, counts_form)
    device = a.device.index
    if device not in _sms:
        _sms[device] = torch.cuda.get_device_properties(device).multi_processor_count
    form = "counts" if counts_form else "offsets"
    g = choose_grouped(rows, G, N, form)
    spec_a, spec_b, spec_d = _specs_of(g)
    a2, b2 = a.contiguous().view(rows, K), b.contiguous().view(G * N, K)
    d = torch.empty((rows, N), dtype=torch.bfloat16, device=a.device)
    grid = g.plans.sched.grid(_sms[device])
    maps = torch.empty(grid * g.consumers * MAP_BYTES, dtype=torch.uint8, device=a.device)
    Launcher.of(g, device)(grid, spec_a.encode(a2, "grouped_mm: a"), spec_b.encode(b2, "grouped_mm: b"),
                           spec_d.encode(d, "grouped_mm: D"), groups.data_ptr(), G, extent, N, K, 1.0,
                           maps.data_ptr(), d.data_ptr(), N * 2)
    return d.view(a.shape[0], a.shape[1], N) if counts_form else d


def _cpu(a: Any, b: Any, groups: Any, counts_form: bool) -> Any:
    from ...interp import run_kernel, tensor_map
    rows, G, N, K, extent = _check(a, b, groups, counts_form)
    check_cpu_size("grouped_mm", rows * N * K)
    g = choose_grouped(rows, G, N, "counts" if counts_form else "offsets")
    spec_a, spec_b, spec_d = _specs_of(g)
    a_bits, b_bits = to_bits(a.reshape(rows, K)), to_bits(b.reshape(G * N, K))
    d = np.full((rows, N), 0x7FC0, np.uint16)                     # NaN: what the kernel leaves unwritten
    grid = _CPU_CTAS * g.cluster
    shape = g.launch_shape
    run_kernel(g.compile(), shape.entry, grid=grid, block=shape.threads, cluster=shape.cluster, smem=shape.smem_bytes,
               args=[tensor_map(spec_a.params_for((rows, K), (K, 1)), a_bits),
                     tensor_map(spec_b.params_for((G * N, K), (K, 1)), b_bits),
                     tensor_map(spec_d.params_for((rows, N), (N, 1)), d), groups.numpy().astype(np.int32), G,
                     extent, N, K, 1.0, np.zeros(grid * g.consumers * MAP_BYTES, np.uint8), d, N * 2])
    out = from_bits(d, torch.bfloat16)
    return out.view(a.shape[0], a.shape[1], N) if counts_form else out


@torch.library.custom_op("pycute::grouped_mm", mutates_args=(),
                         schema="(Tensor a, Tensor b, Tensor? offs=None, Tensor? counts=None) -> Tensor")
def _op(a: Any, b: Any, offs: Any = None, counts: Any = None) -> Any:
    if (offs is None) == (counts is None):
        raise LaunchError("grouped_mm: give the group sizes one way: offs (cumulative ends) or counts (a padded "
                          "batch)")
    groups = counts if offs is None else offs
    if a.is_cuda:
        return _cuda(a, b, groups, offs is None)
    if a.device.type == "cpu":
        return _cpu(a, b, groups, offs is None)
    raise LaunchError(f"grouped_mm: no implementation on {a.device}")


@_op.register_fake
def _fake(a: Any, b: Any, offs: Any = None, counts: Any = None) -> Any:
    counts_form = offs is None
    _check(a, b, counts if counts_form else offs, counts_form)
    return a.new_empty((*a.shape[:-1], b.shape[1]), dtype=torch.bfloat16)


def grouped_mm(a: Any, b: Any, offs: Any = None, *, counts: Any = None) -> Any:
    """One launch of ``a[rows of g] @ b[g].T`` over every group ``g`` (module docstring): ``offs`` int32 cumulative
    ends (``torch._grouped_mm``'s), or ``counts`` int32 rows per group of a padded ``(G, M_max, K)`` ``a``."""
    if type(a) is torch.Tensor and a.is_cuda and not torch.compiler.is_compiling():
        if (offs is None) == (counts is None):
            raise LaunchError("grouped_mm: give the group sizes one way: offs (cumulative ends) or counts (a "
                              "padded batch)")
        with torch.cuda.device(a.device):
            return _cuda(a, b, counts if offs is None else offs, offs is None)
    return torch.ops.pycute.grouped_mm(a, b, offs, counts)
