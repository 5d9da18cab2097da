"""Attention forward as a torch operation: ``pycute::attention(q, k, v, causal, scale) -> (O, lse)`` on
``(batch, seqlen, heads, head_dim)`` tensors, a custom op (``torch.library``) with a fake implementation, so that
``torch.compile(fullgraph=True)`` traces it; on CUDA tensors the compiled kernel launched on torch's current stream
(``Launcher``), on CPU tensors the same kernel compiled for one consumer warpgroup (``cpu_config``) run thread by
thread by ``pycute.interp.run_kernel`` (the GPU's arithmetic but for ``ex2.approx``; slow: small problems only).

``attention`` is the call: in eager mode it goes straight to the launch (the configuration, the grid and the tensor
maps' parameters of a problem seen before are dictionary lookups), under ``torch.compile`` it is the op. Importing
this module imports torch and registers the op."""
from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ...errors import LaunchError
from ..launcher import Launcher, torch_module
from ..tensor_maps import TensorMapSpec
from ..tensors import check_cpu_size, from_bits, to_bits
from .config import HEAD_DIMS, AttentionConfig, Dtype
from .cpu import MAP_SET_BYTES
from .plans import AttentionPlans, Problem

__all__ = ["attention", "attention_varlen", "launch", "launch_varlen", "AttentionCall", "call_for", "cpu_config"]

torch = torch_module()
_DTYPES: dict[Any, Dtype] = {torch.bfloat16: "bf16", torch.float16: "f16"}
_NAN = {"bf16": 0x7FC0, "f16": 0x7E00}
_CPU_CTAS = 2
_LOG2E = math.log2(math.e)
_ENCODED_LIMIT = 1024
_DENSE = (0,) * 7        # a dense batch's packed-sequence arguments: cu_seqlens_q, _k, q, k, v, o, maps
_sms: dict[int, int] = {}


def _strides(t: Any) -> tuple[int, int, int]:
    """(row, head, batch) strides in elements of a ``(batch, seqlen, heads, head_dim)`` tensor."""
    return t.stride(1), t.stride(2), t.stride(0)


@attrs.frozen(eq=False)
class AttentionCall:
    """What a configuration's launches for one problem share: the problem, its grid and its four maps' specs and
    parameters (Q, K, V, O, each a ``(batch, seqlen, heads, head_dim)`` view of its tensor)."""

    config: AttentionConfig
    problem: Problem
    units: int
    maps: tuple[Any, ...]
    specs: tuple[TensorMapSpec, ...]
    _encoded: dict = attrs.field(factory=dict)

    def encode(self, tensors: tuple[Any, ...]) -> tuple[bytes, ...]:
        """The four 128-byte tensor maps of ``tensors`` (Q, K, V, O: CUDA tensors of the problem's shapes and
        strides), cached by their addresses."""
        key = tuple(t.data_ptr() for t in tensors)
        found = self._encoded.get(key)
        if found is None:
            maps = []
            for spec, params, t in zip(self.specs, self.maps, tensors):
                size = t.element_size()
                strides = tuple(s // size for s in reversed(params.global_strides)) + (1,)
                maps.append(spec.encode_raw(t.data_ptr(), tuple(reversed(params.global_dims)), strides))
            if len(self._encoded) >= _ENCODED_LIMIT:
                self._encoded.clear()
            found = self._encoded[key] = tuple(maps)
        return found


_calls: dict[tuple, AttentionCall] = {}


def call_for(config: AttentionConfig, problem: Problem) -> AttentionCall:
    """The configuration's ``AttentionCall`` for ``problem`` (planned once: the four maps checked to issue the
    compiled kernel's boxes)."""
    key = (config, problem)
    found = _calls.get(key)
    if found is None:
        maps = AttentionPlans.maps_of(config, problem)
        kernel = config.plans.maps()
        if [(m.box, m.swizzle, m.element_strides) for m in maps] != \
                [(m.box, m.swizzle, m.element_strides) for m in kernel]:
            raise LaunchError(f"attention: the maps of {problem} take other boxes than the compiled kernel's")
        units = -(-problem.seqlen_q // config.block_m) * problem.batch * problem.heads
        found = _calls[key] = AttentionCall(config, problem, units, maps, tuple(TensorMapSpec.of(m) for m in maps))
    return found


def _check(q: Any, k: Any, v: Any) -> tuple[Problem, Dtype]:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"attention: {name} is a torch tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise LaunchError(f"attention: {name} is (batch, seqlen, heads, head_dim), got shape {tuple(t.shape)}")
    if q.dtype not in _DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        raise LaunchError(f"attention: q, k and v are all bfloat16 or all float16, got {q.dtype}, {k.dtype}, "
                          f"{v.dtype}")
    if not (q.device == k.device == v.device):
        raise LaunchError(f"attention: q, k and v are on {q.device}, {k.device}, {v.device}")
    batch, seqlen_q, heads, d = q.shape
    if tuple(k.shape) != tuple(v.shape) or k.shape[0] != batch or k.shape[3] != d:
        raise LaunchError(f"attention: k and v are (batch, seqlen_k, kv_heads, head_dim) like q's batch and head dim: "
                          f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    if d not in HEAD_DIMS:
        raise LaunchError(f"attention: head dim {d}: the kernel is built for head dims {list(HEAD_DIMS)}")
    kv_heads = k.shape[2]
    if heads % kv_heads:
        raise LaunchError(f"attention: {heads} query heads over {kv_heads} key / value heads: grouped-query attention "
                          f"needs the key / value heads to divide the query heads")
    if min(batch, seqlen_q, heads, k.shape[1]) == 0:
        raise LaunchError(f"attention: an empty problem: q {tuple(q.shape)}, k {tuple(k.shape)}")
    return (Problem(batch, seqlen_q, k.shape[1], heads, kv_heads, _strides(q), _strides(k), _strides(v),
                    (heads * d, d, seqlen_q * heads * d)), _DTYPES[q.dtype])


def _tma_view(t: Any) -> Any:
    """``t`` if TMA reads it as it is (the head dim contiguous, every other stride and the address in whole 16-byte
    units), else a contiguous copy."""
    size = t.element_size()
    if t.stride(3) == 1 and all(s * size % 16 == 0 for s in t.stride()[:3]) and t.data_ptr() % 16 == 0:
        return t
    return t.contiguous()


def _scale(scale: float | None, head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim) if scale is None else float(scale)


def _sm_count(device: int) -> int:
    n = _sms.get(device)
    if n is None:
        n = _sms[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return n


def launch(config: AttentionConfig, q: Any, k: Any, v: Any, o: Any, lse: Any, scale: float | None = None) -> None:
    """``config``'s kernel on torch's current stream, writing ``o`` (contiguous, q's shape) and ``lse`` ((batch,
    heads, seqlen_q) f32) for CUDA tensors TMA reads as they are (``attention`` copies those it cannot)."""
    problem, dtype = _check(q, k, v)
    if dtype != config.dtype or q.shape[3] != config.head_dim:
        raise LaunchError(f"attention: {config!r} is built for {config.dtype} head dim {config.head_dim}, not "
                          f"{dtype} head dim {q.shape[3]}")
    if not o.is_contiguous() or tuple(o.shape) != tuple(q.shape) or o.dtype != q.dtype:
        raise LaunchError(f"attention: O is a contiguous {q.dtype} tensor of q's shape {tuple(q.shape)}")
    call = call_for(config, problem)
    device, p = q.device.index, problem
    Launcher.of(config, device)(min(call.units, _sm_count(device)), *call.encode((q, k, v, o)), lse.data_ptr(),
                                *_DENSE, p.seqlen_q, p.seqlen_k, p.heads, p.group, p.batch, 0,
                                _scale(scale, q.shape[3]) * _LOG2E)


def _attention_cuda(q: Any, k: Any, v: Any, causal: bool, scale: float | None) -> tuple[Any, Any]:
    q, k, v = _tma_view(q), _tma_view(k), _tma_view(v)
    problem, dtype = _check(q, k, v)
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((problem.batch, problem.heads, problem.seqlen_q), dtype=torch.float32, device=q.device)
    launch(AttentionConfig.choose(q.shape[3], causal, dtype), q, k, v, o, lse, scale)
    return o, lse


def cpu_config(head_dim: int, causal: bool, dtype: Dtype, varlen: bool = False) -> AttentionConfig:
    """The configuration CPU tensors run: one consumer warpgroup on 64 x 64 tiles (the interpreter runs every
    thread in Python: the fewest threads and the smallest tiles that take every path of the kernel)."""
    return AttentionConfig(dtype, head_dim, causal, varlen, block_n=64, consumers=1)


def _attention_cpu(q: Any, k: Any, v: Any, causal: bool, scale: float | None) -> tuple[Any, Any]:
    from ...interp import run_kernel, tensor_map
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    problem, dtype = _check(q, k, v)
    p = problem
    check_cpu_size("attention", 2 * p.batch * p.heads * p.seqlen_q * p.seqlen_k * q.shape[3])
    config = cpu_config(q.shape[3], causal, dtype)
    call = call_for(config, problem)
    o = np.full(tuple(q.shape), _NAN[dtype], dtype=np.uint16)          # NaN: every element is written
    lse = np.full((p.batch, p.heads, p.seqlen_q), np.nan, dtype=np.float32)
    maps = [tensor_map(m, bits) for m, bits in zip(call.maps, (to_bits(q), to_bits(k), to_bits(v), o))]
    shape = config.launch_shape
    run_kernel(config.compile(), shape.entry, grid=min(call.units, _CPU_CTAS), block=shape.threads,
               smem=shape.smem_bytes, args=[*maps, lse, *_DENSE, p.seqlen_q, p.seqlen_k, p.heads, p.group,
                                            p.batch, 0, _scale(scale, q.shape[3]) * _LOG2E])
    return from_bits(o, q.dtype), torch.from_numpy(lse)


@torch.library.custom_op("pycute::attention", mutates_args=(),
                         schema="(Tensor q, Tensor k, Tensor v, bool causal=False, float? scale=None) -> "
                                "(Tensor, Tensor)")
def _attention_op(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> tuple[Any, Any]:
    if q.is_cuda:
        return _attention_cuda(q, k, v, causal, scale)
    if q.device.type == "cpu":
        return _attention_cpu(q, k, v, causal, scale)
    raise LaunchError(f"attention: no implementation on {q.device}")


@_attention_op.register_fake
def _attention_fake(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> tuple[Any, Any]:
    problem, _ = _check(q, k, v)
    return (q.new_empty(tuple(q.shape)),
            q.new_empty((problem.batch, problem.heads, problem.seqlen_q), dtype=torch.float32))


def attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> tuple[Any, Any]:
    """``O = softmax(scale q k^T) v`` and each row's log-sum-exp (natural log of the scaled scores), for ``q``
    ``(batch, seqlen_q, heads, head_dim)`` and ``k``, ``v`` ``(batch, seqlen_k, kv_heads, head_dim)``: bfloat16 or
    float16, head dim 64, 128 or 256, ``kv_heads`` dividing ``heads`` (grouped-query attention). ``causal``: query
    ``i`` sees keys ``j <= i + seqlen_k - seqlen_q`` (the diagonal at the bottom right, as FlashAttention aligns
    it); ``scale`` defaults to ``1 / sqrt(head_dim)``. O is ``(batch, seqlen_q, heads, head_dim)`` in q's dtype, the
    log-sum-exp ``(batch, heads, seqlen_q)`` f32; a row that sees no key has O = 0 and log-sum-exp -inf."""
    if not isinstance(q, torch.Tensor):
        raise TypeError(f"attention: q is a torch tensor, got {type(q).__name__}")
    if type(q) is torch.Tensor and q.is_cuda and not torch.compiler.is_compiling():
        if q.device.index == torch.cuda.current_device():
            return _attention_cuda(q, k, v, causal, scale)
        with torch.cuda.device(q.device):
            return _attention_cuda(q, k, v, causal, scale)
    return torch.ops.pycute.attention(q, k, v, causal, scale)


# ---- packed sequences of different lengths ------------------------------------------------------------------------
def _check_varlen(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int) -> tuple[Problem, Dtype]:
    for name, t in (("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"attention_varlen: {name} is a torch tensor, got {type(t).__name__}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 3:
            raise LaunchError(f"attention_varlen: {name} is (total, heads, head_dim), got shape {tuple(t.shape)}")
    if cu_q.dim() != 1 or cu_q.shape != cu_k.shape or cu_q.dtype != torch.int32 or cu_k.dtype != torch.int32 \
            or cu_q.shape[0] < 2:
        raise LaunchError(f"attention_varlen: cu_seqlens_q and cu_seqlens_k are int32 (batch + 1) offsets, got "
                          f"{tuple(cu_q.shape)} {cu_q.dtype} and {tuple(cu_k.shape)} {cu_k.dtype}")
    if cu_q.device != q.device or cu_k.device != q.device:
        raise LaunchError(f"attention_varlen: the offsets are on {cu_q.device} / {cu_k.device}, q on {q.device}")
    if not (isinstance(max_q, int) and isinstance(max_k, int)) or max_q < 1 or max_k < 0:
        raise LaunchError(f"attention_varlen: max_seqlen_q and max_seqlen_k are the longest sequences' lengths (ints, "
                          f"max_seqlen_q >= 1), got {max_q!r} and {max_k!r}")
    dense, dtype = _check(q[None], k[None], v[None])
    d = q.shape[2]
    return (Problem(1, q.shape[0], k.shape[0], dense.heads, dense.kv_heads, (dense.heads * d, d, q.numel()),
                    (dense.kv_heads * d, d, k.numel()), (dense.kv_heads * d, d, k.numel()),
                    (dense.heads * d, d, q.numel())), dtype)


def launch_varlen(config: AttentionConfig, q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int,
                  o: Any, lse: Any, scale: float | None = None) -> None:
    """``config``'s packed-sequence kernel (``config.varlen``) on torch's current stream, writing ``o`` (q's shape)
    and ``lse`` ((heads, total_q) f32), for contiguous CUDA tensors."""
    problem, dtype = _check_varlen(q, k, v, cu_q, cu_k, max_q, max_k)
    if not config.varlen or dtype != config.dtype or q.shape[2] != config.head_dim:
        raise LaunchError(f"attention_varlen: {config!r} is not a packed-sequence kernel for {dtype} head dim "
                          f"{q.shape[2]}")
    for name, t in (("q", q), ("k", k), ("v", v), ("O", o)):
        if not t.is_contiguous():
            raise LaunchError(f"attention_varlen: {name} is contiguous (total, heads, head_dim)")
    call = call_for(config, problem)
    device, p, batch = q.device.index, problem, cu_q.shape[0] - 1
    grid = min(-(-max_q // config.block_m) * batch * p.heads, _sm_count(device))
    maps = torch.empty(grid * MAP_SET_BYTES, dtype=torch.uint8, device=q.device)
    Launcher.of(config, device)(grid, *call.encode((q, k, v, o)), lse.data_ptr(), cu_q.data_ptr(), cu_k.data_ptr(),
                                q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), maps.data_ptr(), max_q,
                                max_k, p.heads, p.group, batch, q.shape[0], _scale(scale, q.shape[2]) * _LOG2E)


def _varlen_cuda(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int, causal: bool,
                 scale: float | None) -> tuple[Any, Any]:
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    problem, dtype = _check_varlen(q, k, v, cu_q, cu_k, max_q, max_k)
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((problem.heads, q.shape[0]), dtype=torch.float32, device=q.device)
    launch_varlen(AttentionConfig.choose(q.shape[2], causal, dtype, varlen=True), q, k, v, cu_q, cu_k, max_q, max_k,
                  o, lse, scale)
    return o, lse


def _varlen_cpu(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int, causal: bool,
                scale: float | None) -> tuple[Any, Any]:
    from .cpu import run_varlen_on_cpu
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    problem, dtype = _check_varlen(q, k, v, cu_q, cu_k, max_q, max_k)
    offsets_q, offsets_k = cu_q.tolist(), cu_k.tolist()
    check_cpu_size("attention_varlen", 2 * problem.heads * q.shape[2] * sum(
        (offsets_q[b + 1] - offsets_q[b]) * (offsets_k[b + 1] - offsets_k[b]) for b in range(len(offsets_q) - 1)))
    o, lse = run_varlen_on_cpu(cpu_config(q.shape[2], causal, dtype, True), to_bits(q), to_bits(k), to_bits(v),
                               offsets_q, offsets_k, _scale(scale, q.shape[2]), grid=_CPU_CTAS)
    return from_bits(o, q.dtype), torch.from_numpy(lse)


@torch.library.custom_op("pycute::attention_varlen", mutates_args=(),
                         schema="(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, "
                                "int max_seqlen_q, int max_seqlen_k, bool causal=False, float? scale=None) -> "
                                "(Tensor, Tensor)")
def _varlen_op(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int, causal: bool = False,
               scale: float | None = None) -> tuple[Any, Any]:
    if q.is_cuda:
        return _varlen_cuda(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale)
    if q.device.type == "cpu":
        return _varlen_cpu(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale)
    raise LaunchError(f"attention_varlen: no implementation on {q.device}")


@_varlen_op.register_fake
def _varlen_fake(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int, causal: bool = False,
                 scale: float | None = None) -> tuple[Any, Any]:
    problem, _ = _check_varlen(q, k, v, cu_q, cu_k, max_q, max_k)
    return q.new_empty(tuple(q.shape)), q.new_empty((problem.heads, q.shape[0]), dtype=torch.float32)


def attention_varlen(q: Any, k: Any, v: Any, cu_seqlens_q: Any, cu_seqlens_k: Any, max_seqlen_q: int,
                     max_seqlen_k: int, causal: bool = False, scale: float | None = None) -> tuple[Any, Any]:
    """Attention over packed sequences of different lengths: ``q`` ``(total_q, heads, head_dim)``, ``k`` and ``v``
    ``(total_k, kv_heads, head_dim)``, sequence ``b`` the rows ``[cu_seqlens_q[b], cu_seqlens_q[b + 1])`` of q (of
    k and v: ``cu_seqlens_k``), int32 offsets on q's device, ``max_seqlen_q`` / ``_k`` the longest sequences'
    lengths (host ints, as FlashAttention takes them). Each sequence attends to its own keys only (causal: aligned
    at its own bottom right), nothing is read or written outside a sequence (the maps are pointed at each sequence
    on the device). O is ``(total_q, heads, head_dim)``, the log-sum-exp ``(heads, total_q)`` f32."""
    if not isinstance(q, torch.Tensor):
        raise TypeError(f"attention_varlen: q is a torch tensor, got {type(q).__name__}")
    if type(q) is torch.Tensor and q.is_cuda and not torch.compiler.is_compiling():
        with torch.cuda.device(q.device):
            return _varlen_cuda(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale)
    return torch.ops.pycute.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal,
                                             scale)
