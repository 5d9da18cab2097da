"""The Hopper GEMM as a torch operation: ``D = epilogue(scale * a @ b.T)``, a custom op (``torch.library``,
``pycute::gemm``) with a fake implementation, so that ``torch.compile(fullgraph=True)`` traces it; on CUDA tensors
the compiled kernel launched on torch's current stream (``Launcher``), on CPU tensors the very same compiled kernel
run thread by thread by ``pycute.interp.run_kernel`` (exact and slow: small problems only).

The epilogue is fused (docs/kernels.md): a per-column ``bias``, an ``activation``, a ``residual``, or a user's own
``Epilogue`` with its named inputs, and D's type (bf16, f16, f32, e4m3). The op's schema carries the epilogue as its
canonical text with its tensors and scalars in order.

``gemm`` is the call: in eager mode it goes straight to the launch (a cached call spends a few microseconds on the
host: the configuration, the grid and the tensor maps of a problem seen before are dictionary lookups), under
``torch.compile`` it is the op. Importing this module imports torch and registers the op."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ...errors import LaunchError
from ..fused import PLAIN, Epilogue, FusedEpilogue, bias_activation
from ...pipeline.split_k import KSplit
from ..launcher import Launcher, current_stream, sm_count, torch_module
from ..tensor_maps import torch_dtype_name
from ..tensors import check_cpu_size, empty_rows, from_bits, row_pitch, tma_rows, to_bits
from ..tuner import tuning_enabled
from .config import HopperGemm, choose_split, plan_split, shared
from .plans import Dtype
from .runs import GemmRun, gemm_run
from .tune import tune, tuned

__all__ = ["gemm", "GemmRun", "gemm_run", "config_for", "counters"]

torch = torch_module()
_DTYPES: dict[Any, Dtype] = {torch.bfloat16: "bf16", torch.float8_e4m3fn: "e4m3"}
_OUT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f8e4m3": torch.float8_e4m3fn}
_NAN = {"bf16": 0x7FC0, "f16": 0x7E00, "f32": 0x7FC00000, "f8e4m3": 0x7F}     # a NaN of each type, as bits
_CPU_CTAS = 2             # CTAs (whole clusters) a CPU run launches: each walks its share of the tiles
_NO_INPUTS = b"\0"        # the empty epilogue_params struct (C++: one byte)


_configs: dict[tuple, tuple[HopperGemm, KSplit]] = {}
_counters: dict[tuple[int, int], Any] = {}
_parsed: dict[str, Epilogue] = {"acc": PLAIN}


def config_for(M: int, N: int, K: int, dtype: Dtype, sms: int, out: str = "bf16",
               fused: FusedEpilogue | None = None, base: HopperGemm | None = None,
               device: int | None = None) -> tuple[HopperGemm, KSplit]:
    """The configuration for the problem, with D's type and the fused epilogue, and its partition (remembered):
    ``base`` if given, else on CUDA device ``device`` the tuned winner of its shape class (tuned first under
    ``PYCUTE_TUNE=1``), its tiles whole or shared as ``plan_split`` models best; else ``choose_split``'s first guess
    (the configuration and the partition together). A configuration whose tiles are shared has ``split_k`` set."""
    key = (M, N, K, dtype, sms, out, fused, base, device)
    found = _configs.get(key)
    if found is None:
        g = base
        if g is None and device is not None:
            name = torch.cuda.get_device_name(device)
            g = tuned(M, N, K, dtype, name)
            if g is None and tuning_enabled():
                g = tune(M, N, K, dtype, device).winner
        if g is None:
            g, split = choose_split(M, N, K, dtype, sms)
        else:
            split = plan_split(g, M, N, K, sms)[0]
            g = shared(g) if split.workers else g
        if g.dtype != dtype:
            raise LaunchError(f"gemm: the configuration {g!r} reads {g.dtype} operands; a and b are {dtype}")
        if out != g.out or (fused or FusedEpilogue()) != g.epilogue:
            g = attrs.evolve(g, out=out, epilogue=fused or FusedEpilogue())
        found = _configs[key] = (g, split)
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


def _epilogue(text: str) -> Epilogue:
    ep = _parsed.get(text)
    if ep is None:
        ep = _parsed[text] = Epilogue.parse(text)
    return ep


def _inputs(ep: Epilogue, tensors: Any, scalars: Any, M: int, N: int, device: Any,
            fake: bool = False) -> tuple[list, FusedEpilogue]:
    """The epilogue's tensors, checked (shape by kind, a type it reads, the device) and made readable as the kernel
    reads them (unit inner stride, pairs aligned: a copy where not; ``fake``: checked only), and the epilogue bound
    to their types."""
    if len(tensors) != len(ep.tensors) or len(scalars) != len(ep.scalars):
        raise LaunchError(f"gemm: {ep!r} takes the tensors {ep.tensors} and the scalars {ep.scalars}; got "
                          f"{len(tensors)} tensor(s) and {len(scalars)} scalar(s)")
    kinds, out = dict(ep.inputs), []
    for name, t in zip(ep.tensors, tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"gemm: epilogue input {name!r} is a torch tensor, got {type(t).__name__}")
        want = {"row": (M,), "col": (N,), "residual": (M, N)}[kinds[name]]
        if tuple(t.shape) != want or t.device != device or t.dtype not in (torch.bfloat16, torch.float16,
                                                                            torch.float32):
            raise LaunchError(f"gemm: epilogue input {name!r} ({kinds[name]}) is a {' x '.join(map(str, want))} "
                              f"bfloat16, float16 or float32 tensor on {device}; got {tuple(t.shape)} {t.dtype} on "
                              f"{t.device}")
        pair = 2 * t.element_size()
        if not fake and (t.stride(-1) != 1 or t.data_ptr() % pair or (t.dim() == 2 and t.stride(0) % 2)):
            t = tma_rows(t) if t.dim() == 2 else t.contiguous().clone()
        out.append(t)
    return out, FusedEpilogue(ep, tuple(torch_dtype_name(t.dtype) for t in out))


def _values(fused: FusedEpilogue, tensors: list, scalars: Any, place: Any) -> dict[str, Any]:
    """The struct's values by field name: ``place(tensor)`` for each pointer, the residuals' row pitches."""
    values: dict[str, Any] = dict(zip(fused.epilogue.scalars, map(float, scalars)))
    for name, t in zip(fused.epilogue.tensors, tensors):
        values[name] = place(t)
        if t.dim() == 2:
            values[f"{name}_ld"] = t.stride(0)
    return values


def _gemm_cuda(a: Any, b: Any, scale: float, text: str = "acc", tensors: Any = (), scalars: Any = (),
               out_dtype: str = "bf16", out: Any = None, config: HopperGemm | None = None) -> Any:
    M, N, K, dtype = _check(a, b)
    device = a.device.index
    sms = sm_count(device)
    if text == "acc" and not tensors:                       # the plain GEMM: nothing to bind
        fused, params = None, _NO_INPUTS
    else:
        tensors, fused = _inputs(_epilogue(text), tensors, scalars, M, N, a.device)
        params = fused.struct_bytes(_values(fused, tensors, scalars, lambda t: t.data_ptr()))
    g, split = config_for(M, N, K, dtype, sms, out_dtype, fused, config, device)
    run = gemm_run(g)
    a, b = tma_rows(a), tma_rows(b)
    if out is None:
        pitch = row_pitch(N, _OUT[out_dtype].itemsize)
        d = torch.empty((M, pitch), dtype=_OUT[out_dtype], device=a.device)   # the store's map covers the pad
    else:                                                                      # checked by gemm()
        pitch, d = N, out
    launch = run.launch(M, N, K, split, sms * g.ctas_per_sm)
    ws = ctr = 0
    if launch.counters:
        ws = torch.empty(launch.workspace_bytes // 4, dtype=torch.float32, device=a.device).data_ptr()
        ctr = counters(device, current_stream(device), launch.counters).data_ptr()
    Launcher.of(g, device)(launch.grid, run.map_a.encode(a, "gemm: a"), run.map_b.encode(b, "gemm: b"),
                           run.map_d.encode(d, "gemm: out" if out is not None else "gemm: D"), M, N, K, float(scale),
                           ws, ctr, split.dp, split.workers, 0, 0, params)
    return d if pitch == N else d[:, :N]


def _gemm_cpu(a: Any, b: Any, scale: float, text: str, tensors: Any, scalars: Any, out_dtype: str,
              config: HopperGemm | None = None, split: KSplit | None = None) -> Any:
    """The CPU run (pycute.interp): ``config_for``'s configuration and partition, or ``config`` shared as
    ``split``."""
    from ...interp import run_kernel, tensor_map
    M, N, K, dtype = _check(a, b)
    check_cpu_size("gemm", M * N * K)
    tensors, fused = _inputs(_epilogue(text), tensors, scalars, M, N, a.device)
    tensors = [empty_rows(M, N, t.dtype, t.device).copy_(t) if t.dim() == 2 else t for t in tensors]   # own rows
    g, chosen = config_for(M, N, K, dtype, 132, out_dtype, fused, config)
    split = split or chosen
    run = gemm_run(g)
    unit = row_pitch(K, a.element_size())
    maps = []
    for spec, t in ((run.map_a, a), (run.map_b, b)):
        bits = np.zeros((t.shape[0], unit), np.uint16 if t.element_size() == 2 else np.uint8)
        bits[:, :K] = to_bits(t)
        maps.append(tensor_map(spec.params_for(tuple(bits.shape), (unit, 1)), bits))
    size = _OUT[out_dtype].itemsize
    pitch = row_pitch(N, size)
    d = np.full((M, pitch), _NAN[out_dtype], {1: np.uint8, 2: np.uint16, 4: np.uint32}[size])   # every element set
    maps.append(tensor_map(run.map_d.params_for((M, pitch), (pitch, 1)), d))
    def place(t: Any) -> np.ndarray:              # a residual's whole rows, pad included: the kernel reads by pitch
        return to_bits(t.as_strided((t.shape[0], t.stride(0)), (t.stride(0), 1)) if t.dim() == 2 else t)
    params = fused.struct_arg(_values(fused, tensors, scalars, place))
    shape = g.launch_shape
    launch = run.launch(M, N, K, split, _CPU_CTAS * shape.cluster_size)
    ws = np.full(max(1, launch.workspace_bytes // 4), np.nan, np.float32)
    ctr = np.zeros(max(1, launch.counters), np.uint32)
    run_kernel(g.compile(), shape.entry, grid=launch.grid, block=shape.threads, cluster=shape.cluster,
               smem=shape.smem_bytes, args=[*maps, M, N, K, float(scale), ws, ctr, split.dp, split.workers,
                                            np.zeros(1, np.float32), np.zeros(1, np.float32), params])
    return from_bits(d, _OUT[out_dtype])[:, :N]


@torch.library.custom_op("pycute::gemm", mutates_args=(),
                         schema="(Tensor a, Tensor b, float scale=1.0, str epilogue='acc', Tensor[]? tensors=None, "
                                "float[]? scalars=None, str out_dtype='bf16') -> Tensor")
def _gemm_op(a: Any, b: Any, scale: float = 1.0, epilogue: str = "acc", tensors: Any = None, scalars: Any = None,
             out_dtype: str = "bf16") -> Any:
    if a.is_cuda:
        return _gemm_cuda(a, b, scale, epilogue, list(tensors or ()), list(scalars or ()), out_dtype)
    if a.device.type == "cpu":
        return _gemm_cpu(a, b, scale, epilogue, list(tensors or ()), list(scalars or ()), out_dtype)
    raise LaunchError(f"gemm: no implementation on {a.device}")


@_gemm_op.register_fake
def _gemm_fake(a: Any, b: Any, scale: float = 1.0, epilogue: str = "acc", tensors: Any = None,
               scalars: Any = None, out_dtype: str = "bf16") -> Any:
    M, N, _, _ = _check(a, b)
    _inputs(_epilogue(epilogue), list(tensors or ()), list(scalars or ()), M, N, a.device, fake=True)
    pitch = row_pitch(N, _OUT[out_dtype].itemsize)
    return a.new_empty((M, pitch), dtype=_OUT[out_dtype])[:, :N]


def _out_name(out_dtype: Any) -> str:
    if out_dtype is None:
        return "bf16"
    name = out_dtype if isinstance(out_dtype, str) else torch_dtype_name(out_dtype)
    if name not in _OUT:
        raise LaunchError(f"gemm: D's type is one of {', '.join(_OUT)} (or their torch dtypes), not {out_dtype}")
    return name


def _check_out(out: Any, M: int, N: int, device: Any, out_dtype: str) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"gemm: out is a torch tensor, got {type(out).__name__}")
    want = _OUT[out_dtype]
    if out.dtype != want or tuple(out.shape) != (M, N) or out.device != device:
        raise LaunchError(f"gemm: out must be a {M} x {N} {str(want).removeprefix('torch.')} tensor on {device}; got "
                          f"{tuple(out.shape)} {out.dtype} on {out.device}")
    if N * want.itemsize % 16:
        raise LaunchError(f"gemm: out's rows are {N} x {want.itemsize} B = {N * want.itemsize} B; a TMA store writes "
                          f"whole 16-byte units and would write past column {N} of out (leave out=None: D is then "
                          f"padded for you)")


def gemm(a: Any, b: Any, scale: float = 1.0, *, bias: Any = None, activation: str | None = None,
         residual: Any = None, epilogue: Epilogue | None = None, out_dtype: Any = None, out: Any = None,
         config: HopperGemm | None = None, **inputs: Any) -> Any:
    """``D = epilogue(scale * a @ b.T)`` with f32 accumulation: ``a`` M x K and ``b`` N x K, both bfloat16 or both
    float8_e4m3fn, on one CUDA device (or small ones on the CPU, exact, through the interpreter).

    The epilogue: ``activation(acc + bias) + residual`` (``bias`` a vector of N, ``activation`` one of relu, gelu
    (erf), gelu_tanh, silu, ``residual`` M x N; each optional), or a user's ``epilogue`` (``@pycute.kernels
    .epilogue``) with its inputs by name (``**inputs``: tensors of M, N or M x N values, floats). D is
    ``out_dtype``: bf16 (default), f16, f32 or e4m3 (saturating). Any M, N, K; rows that TMA cannot read as they are
    are copied first; D's rows are padded to whole 16-byte units when N is not (a view). ``out``: an M x N tensor
    of D's type to write (rows of whole 16-byte units), returned. ``config``: a ``HopperGemm`` to run instead of
    the chosen one (eager calls only; its D type and epilogue are the call's)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"gemm: a and b are torch tensors, got {type(a).__name__} and {type(b).__name__}")
    ep, named = _user_epilogue(bias, activation, residual, epilogue, inputs)
    tensors = [named[n] for n in ep.tensors]
    scalars = [float(named[n]) for n in ep.scalars]
    out_name = _out_name(out_dtype)
    if out is not None:
        _check_out(out, a.shape[0], b.shape[0], a.device, out_name)
    if type(a) is torch.Tensor and a.is_cuda and not torch.compiler.is_compiling():
        if a.device.index == torch.cuda.current_device():
            return _gemm_cuda(a, b, scale, ep.text, tensors, scalars, out_name, out, config)
        with torch.cuda.device(a.device):
            return _gemm_cuda(a, b, scale, ep.text, tensors, scalars, out_name, out, config)
    if config is not None:
        if torch.compiler.is_compiling():
            raise LaunchError("gemm: config= is for eager calls; under torch.compile the op chooses")
        if a.device.type == "cpu":
            d = _gemm_cpu(a, b, scale, ep.text, tensors, scalars, out_name, config)
            return d if out is None else out.copy_(d)
    d = torch.ops.pycute.gemm(a, b, scale, ep.text, tensors, scalars, out_name)
    return d if out is None else out.copy_(d)


def _user_epilogue(bias: Any, activation: str | None, residual: Any, epilogue: Epilogue | None,
                   inputs: dict[str, Any]) -> tuple[Epilogue, dict[str, Any]]:
    """The epilogue a call asks for and its inputs by name."""
    if epilogue is None:
        if inputs:
            raise LaunchError(f"gemm: the inputs {sorted(inputs)} belong to no epilogue (pass epilogue=...)")
        if bias is None and activation is None and residual is None:
            return PLAIN, {}
        ep = bias_activation(bias is not None, activation, residual is not None)
        return ep, {"bias": bias, "residual": residual}
    if not isinstance(epilogue, Epilogue):
        raise TypeError(f"gemm: epilogue is a pycute.kernels.Epilogue (@pycute.kernels.epilogue), got "
                        f"{type(epilogue).__name__}")
    if activation is not None:
        raise LaunchError("gemm: activation is the built-in epilogue's; with epilogue=..., write it in the epilogue")
    inputs = {**inputs, **{k: v for k, v in (("bias", bias), ("residual", residual)) if v is not None}}
    names = [n for n, _ in epilogue.inputs]
    if sorted(inputs) != sorted(names):
        raise LaunchError(f"gemm: {epilogue!r} takes the inputs {names}; got {sorted(inputs)}")
    return epilogue, inputs
