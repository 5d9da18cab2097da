"""The block-scaled GEMM as a torch operation: ``pycute.kernels.blockscaled_mm(a, b, sfa, sfb, kind, out_dtype,
cta_group)`` = ``(a * sfa) @ (b * sfb).T`` in f32 or bf16, the custom op ``pycute::blockscaled_gemm`` with a fake
implementation. Operands are element codes: MXF8 ``a`` M x K float8_e4m3fn (or its bytes as uint8) with UE8M0 scale
factors ``sfa`` M x K/32 (uint8 codes); NVFP4 ``a`` M x K/2 uint8 (two E2M1 codes a byte, the lower K in the low
nibble) with UE4M3 scale factors M x K/16 (float8_e4m3fn or uint8). The scale factors are packed into the kernel's
blocked layout by one gather (``config.sf_pack_index``).

CPU tensors run the compiled sm_100a kernel whole in pycute's interpreter (exact; small problems). CUDA tensors launch
it through the launcher on an sm_100 GPU only -- no Blackwell GPU has run it (docs/kernels.md); on any other device the
op raises ``LaunchError``. Importing this module imports torch and registers the op."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import LaunchError
from ...sim.verify_mma import sf_power_code
from ..launcher import Launcher, torch_module
from ..tensor_maps import TORCH_NAMES, TensorMapSpec
from ..tensors import check_cpu_size, from_bits
from .check import run_arrays
from .config import D_TYPES, FORMATS, BlockScaledGemm, sf_pack_index

__all__ = ["blockscaled_mm"]

torch = torch_module()
_OUT = {"f32": torch.float32, "bf16": torch.bfloat16}
_CPU_CTAS = 2                     # CTAs (or pairs) a CPU run launches
_index: dict[tuple, Any] = {}


def _shape(a: Any, b: Any, sfa: Any, sfb: Any, kind: str, out_dtype: str, cta_group: int) -> tuple[int, int, int]:
    """(M, N, K), every operand checked: kind, dtypes, shapes, K in whole 16-byte rows."""
    for name, t in (("a", a), ("b", b), ("sfa", sfa), ("sfb", sfb)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"blockscaled_gemm: {name} is a torch tensor, got {type(t).__name__}")
    if kind not in FORMATS or out_dtype not in D_TYPES or cta_group not in (1, 2):
        raise LaunchError(f"blockscaled_gemm: kind is one of {', '.join(FORMATS)}, out_dtype one of "
                          f"{', '.join(D_TYPES)} and cta_group 1 or 2; got {kind!r}, {out_dtype!r}, {cta_group!r}")
    elements = ("float8_e4m3fn", "uint8") if kind == "mxf8" else ("uint8", "float4_e2m1fn_x2")
    scales = ("uint8", "float8_e8m0fnu") if kind == "mxf8" else ("uint8", "float8_e4m3fn")
    for name, t, allowed in (("a", a, elements), ("b", b, elements), ("sfa", sfa, scales), ("sfb", sfb, scales)):
        if str(t.dtype).removeprefix("torch.") not in allowed or t.dim() != 2:
            raise LaunchError(f"blockscaled_gemm ({kind}): {name} is a 2-D tensor of {' or '.join(allowed)}; got "
                              f"{tuple(t.shape)} {t.dtype}")
    per_byte = 2 if kind == "nvfp4" else 1
    M, N, K = a.shape[0], b.shape[0], a.shape[1] * per_byte
    if b.shape[1] * per_byte != K:
        raise LaunchError(f"blockscaled_gemm: a is {M} x {K} and b {N} x {b.shape[1] * per_byte} elements; their K "
                          f"differ")
    if (K // per_byte) % 16 or K == 0 or M == 0 or N == 0:
        raise LaunchError(f"blockscaled_gemm: K = {K} ({kind}) is {K // per_byte} bytes a row; TMA reads rows of "
                          f"whole 16 bytes")
    vector = 32 if kind == "mxf8" else 16
    sfs = -(-K // vector)
    if tuple(sfa.shape) != (M, sfs) or tuple(sfb.shape) != (N, sfs):
        raise LaunchError(f"blockscaled_gemm ({kind}): one scale factor per {vector} elements of K: sfa {M} x {sfs} "
                          f"and sfb {N} x {sfs}; got {tuple(sfa.shape)} and {tuple(sfb.shape)}")
    if len({t.device for t in (a, b, sfa, sfb)}) != 1:
        raise LaunchError("blockscaled_gemm: every operand on one device")
    return M, N, K


def _bytes(t: Any) -> Any:
    return t.contiguous().view(torch.uint8)


def _as_map(t: Any, spec: TensorMapSpec, rows: int) -> Any:
    """``t``'s bytes as the 2-D tensor of the type the map reads (E4M3 codes, or the packed FP4 bytes)."""
    return _bytes(t).reshape(rows, -1).view(getattr(torch, TORCH_NAMES[spec.dtype]))


def _packed(gemm: BlockScaledGemm, codes: Any, which: str) -> Any:
    """The scale factors' codes in the kernel's packed layout (one gather; pads hold the code of 1.0)."""
    sf, tiles = (gemm.sfa, gemm.tiles[0]) if which == "sfa" else (gemm.sfb, gemm.tiles[1])
    key = (gemm, which, codes.device)
    index = _index.get(key)
    if index is None:
        raw = sf_pack_index(sf, codes.shape[0], codes.shape[1], tiles, gemm.k_blocks)
        index = _index[key] = torch.from_numpy(raw).to(codes.device)
    flat = _bytes(codes).reshape(-1)
    fill = torch.tensor(int(sf_power_code(gemm.format.sf_type, 0)), dtype=torch.uint8, device=codes.device)
    return torch.where(index >= 0, flat[index.clamp(min=0)], fill)


def _cpu(a: Any, b: Any, sfa: Any, sfb: Any, kind: str, out_dtype: str, cta_group: int) -> Any:
    M, N, K = _shape(a, b, sfa, sfb, kind, out_dtype, cta_group)
    check_cpu_size("blockscaled_gemm", M * N * K)
    gemm = BlockScaledGemm(kind, cta_group, M, N, K, out_dtype, sms=_CPU_CTAS * cta_group)  # type: ignore[arg-type]
    d = np.full(M * gemm.ldd, np.nan, np.float32) if out_dtype == "f32" else np.full(M * gemm.ldd, 0x7FC0, np.uint16)
    data = {"a": _bytes(a).numpy().reshape(-1), "b": _bytes(b).numpy().reshape(-1), "d": d,
            "sfa": _packed(gemm, sfa, "sfa").numpy(), "sfb": _packed(gemm, sfb, "sfb").numpy()}
    run_arrays(gemm, data)
    return from_bits(d.view(np.uint32) if out_dtype == "f32" else d, _OUT[out_dtype]).reshape(M, gemm.ldd)[:, :N]


def _cuda(a: Any, b: Any, sfa: Any, sfb: Any, kind: str, out_dtype: str, cta_group: int) -> Any:
    M, N, K = _shape(a, b, sfa, sfb, kind, out_dtype, cta_group)
    device = a.device.index
    major, minor = torch.cuda.get_device_capability(device)
    if major != 10:
        raise LaunchError(f"blockscaled_gemm runs tcgen05 (sm_100a): device {device} is sm_{major}{minor}; on the CPU "
                          f"the op runs the same kernel in pycute's interpreter")
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    gemm = BlockScaledGemm(kind, cta_group, M, N, K, out_dtype, sms=sms)  # type: ignore[arg-type]
    loads = dict(gemm.operands.loads)
    map_a, map_b, map_d = (TensorMapSpec.of(m) for m in (loads["a"].tensor_map, loads["b"].tensor_map,
                                                           gemm.epilogue.store.tma.tensor_map))
    d = torch.empty((M, gemm.ldd), dtype=_OUT[out_dtype], device=a.device)
    packed_a, packed_b = _packed(gemm, sfa, "sfa"), _packed(gemm, sfb, "sfb")
    Launcher.of(gemm, device)(gemm.grid, map_a.encode(_as_map(a, map_a, M), "blockscaled_gemm: a"),
                              map_b.encode(_as_map(b, map_b, N), "blockscaled_gemm: b"), packed_a.data_ptr(),
                              packed_b.data_ptr(), map_d.encode(d, "blockscaled_gemm: D"), gemm.tiles[0],
                              gemm.tiles[1], gemm.k_blocks)
    return d[:, :N]


@torch.library.custom_op("pycute::blockscaled_gemm", mutates_args=(),
                         schema="(Tensor a, Tensor b, Tensor sfa, Tensor sfb, str kind, str out_dtype='f32', "
                                "int cta_group=1) -> Tensor")
def _op(a: Any, b: Any, sfa: Any, sfb: Any, kind: str, out_dtype: str = "f32", cta_group: int = 1) -> Any:
    if a.is_cuda:
        return _cuda(a, b, sfa, sfb, kind, out_dtype, cta_group)
    if a.device.type == "cpu":
        return _cpu(a, b, sfa, sfb, kind, out_dtype, cta_group)
    raise LaunchError(f"blockscaled_gemm: no implementation on {a.device}")


@_op.register_fake
def _fake(a: Any, b: Any, sfa: Any, sfb: Any, kind: str, out_dtype: str = "f32", cta_group: int = 1) -> Any:
    M, N, _ = _shape(a, b, sfa, sfb, kind, out_dtype, cta_group)
    unit = 4 if out_dtype == "f32" else 8                 # D's rows padded to whole 16 bytes
    return a.new_empty((M, -(-N // unit) * unit), dtype=_OUT[out_dtype])[:, :N]


def blockscaled_mm(a: Any, b: Any, sfa: Any, sfb: Any, kind: str = "mxf8", out_dtype: str = "f32",
                   cta_group: int = 1) -> Any:
    """``(a * sfa) @ (b * sfb).T`` for ``kind`` "mxf8" or "nvfp4" (the module's docstring has the operands' forms),
    in ``out_dtype`` "f32" or "bf16"; ``cta_group`` 2 computes each 256 x 128 tile on a CTA pair."""
    return torch.ops.pycute.blockscaled_gemm(a, b, sfa, sfb, kind, out_dtype, cta_group)
