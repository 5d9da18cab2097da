"""CUDA C++ for TMA's other load modes: the header wrappers of the im2col loads (sm_90), of im2col::w / ::w::128 and
gather4 / scatter4 (sm_100a), and the issuing function of an im2col plan, which turns a tile index of the implicit
GEMM's A into each load's coordinates and offsets (divisions by the problem's constants)."""
from __future__ import annotations

from ..arch.sm100.tma_modes import gather4_ptx, im2col_w_ptx, scatter4_ptx
from ..arch.sm90.tma_im2col import IM2COL_RANKS, im2col_ptx
from ..copy.tma.im2col import Im2colPlan
from ..copy.tma.modes100 import Gather4Plan, Im2colWPlan
from ..views import provides
from .cache import createpolicy_statement
from .common import ABI_VERSION, check_function_name

__all__ = ["tma_mode_header_functions", "im2col_helper", "emit_im2col_copy", "emit_im2col_w_copy", "emit_gather4"]


def im2col_helper(rank: int, mode: str = "im2col", cache_hint: bool = False) -> str:
    """The header's wrapper of a ``rank``-D ``.im2col`` load (``mode`` ``w`` / ``w128``: the sm_100a W modes)."""
    return f"pycute_tma_load_{mode}_{rank}d" + ("_hint" if cache_hint else "")


def _load(name: str, ptx: str, rank: int, extra: int, hint: bool) -> str:
    """``name(map, smem, mbar, c0..c{rank-1}, o0..o{extra-1}[, policy])``: one load with ``extra`` 16-bit operands."""
    coords = ", ".join(f"int c{k}" for k in range(rank))
    shorts = ", ".join(f"unsigned short o{k}" for k in range(extra))
    regs = ", ".join(f"%{3 + k}" for k in range(rank))
    oregs = ", ".join(f"%{3 + rank + k}" for k in range(extra))
    constraints = ", ".join([f'"r"(c{k})' for k in range(rank)] + [f'"h"(o{k})' for k in range(extra)])
    policy = (", unsigned long long policy", f", %{3 + rank + extra}", ', "l"(policy)') if hint else ("", "", "")
    return (f"__device__ __forceinline__ void {name}(const void* map, unsigned smem, unsigned mbar, {coords}, "
            f"{shorts}{policy[0]}) {{\n"
            f'  asm volatile("{ptx} [%0], [%1, {{{regs}}}], [%2], {{{oregs}}}{policy[1]};"\n'
            f'               :: "r"(smem), "l"(map), "r"(mbar), {constraints}{policy[2]} : "memory");\n}}')


def tma_mode_header_functions() -> str:
    """The im2col loads of every rank (with and without an L2 policy), the W modes, gather4 and scatter4."""
    out = [_load(im2col_helper(r, cache_hint=h), im2col_ptx(r, h), r, r - 2, h) for h in (False, True)
           for r in IM2COL_RANKS]
    out += [_load(im2col_helper(r, m), im2col_w_ptx(r, m), r, 2, False) for m in ("w", "w128") for r in IM2COL_RANKS]
    rows = ", ".join(f"int r{k}" for k in range(4))
    regs = '"r"(col), "r"(r0), "r"(r1), "r"(r2), "r"(r3)'
    out.append(f"__device__ __forceinline__ void pycute_tma_gather4(const void* map, unsigned smem, unsigned mbar, "
               f"int col, {rows}) {{\n"
               f'  asm volatile("{gather4_ptx()} [%0], [%1, {{%3, %4, %5, %6, %7}}], [%2];"\n'
               f'               :: "r"(smem), "l"(map), "r"(mbar), {regs} : "memory");\n}}')
    out.append(f"__device__ __forceinline__ void pycute_tma_scatter4(const void* map, unsigned smem, int col, {rows}) "
               f"{{\n"
               f'  asm volatile("{scatter4_ptx()} [%0, {{%2, %3, %4, %5, %6}}], [%1];"\n'
               f'               :: "l"(map), "r"(smem), {regs} : "memory");\n}}')
    return "\n".join(out)


def _pixel(plan: Im2colPlan, m: str) -> list[str]:
    """Statements giving the box position of output pixel ``m`` (unsigned): ``n`` and ``b<i>`` per spatial dim."""
    conv, lines = plan.conv, []
    rest = m
    for i in reversed(range(len(conv.spatial))):
        extent = conv.output[i]
        lines.append(f"const int b{i} = (int)({rest} % {extent}u) * {conv.stride[i]} - {conv.padding[i]};")
        rest = f"({rest} / {extent}u)"
    lines.append(f"const int n = (int){rest};")
    return lines


def _tap(plan: Im2colPlan, k: str) -> list[str]:
    """Statements giving column ``k``'s channel ``c`` and the tap's offsets ``o<i>`` per spatial dim."""
    conv = plan.conv
    lines = [f"const int c = (int)({k} % {conv.channels}u);", f"const unsigned tap = {k} / {conv.channels}u;"]
    rest = "tap"
    for i in reversed(range(len(conv.spatial))):
        lines.append(f"const unsigned short o{i} = (unsigned short)(({rest} % {conv.filter[i]}u) * "
                     f"{conv.dilation[i]}u);")
        rest = f"({rest} / {conv.filter[i]}u)"
    return lines


@provides("cuda", Im2colPlan)
def emit_im2col_copy(plan: Im2colPlan, name: str = "pycute_im2col_copy") -> str:
    """The issuing function of an im2col plan and ``<name>_expect_tx``."""
    check_function_name(name)
    m, conv = plan.tensor_map, plan.conv
    spatial = len(conv.spatial)
    bm, bk = plan.tile_shape
    hint = plan.cache_hint is not None
    head = [f"// {len(plan.instructions)} x {plan.ptx} ({m.pixels} pixels x {m.channels} channels, swizzle "
            f"{m.swizzle.name}), pycute C ABI {ABI_VERSION}",
            f"// im2col map: {m.dtype} dims {m.global_dims} strides {m.global_strides} B corners {m.lower} .. {m.upper} "
            f"traversal {m.element_strides} (plan.tensor_map.encode(address))",
            f"// conv: N {conv.batch}, spatial {conv.spatial}, C {conv.channels}, filter {conv.filter}, padding "
            f"{conv.padding}, stride {conv.stride}, dilation {conv.dilation}; A is {conv.m} x {conv.k}",
            f"// Loads A[m_tile * {bm} .., k_tile * {bk} ..] into the tile {plan.smem!r}; rows past {conv.m} load zeros.",
            "// Call from one thread (elected); arm `mbar` with pycute_mbarrier_arrive_expect_tx(mbar, "
            f"{name}_expect_tx) in the same phase; k_tile in [0, {plan.tiles[1]})."]
    body = [createpolicy_statement(plan.cache_hint)] if plan.cache_hint is not None else []
    helper = im2col_helper(m.rank, cache_hint=hint)
    for i in plan.instructions:
        spatial_coords = ", ".join(f"b{j}" for j in reversed(range(spatial)))
        offsets = ", ".join(f"o{j}" for j in reversed(range(spatial)))
        inner = [f"const unsigned m = (unsigned)m_tile * {bm}u + {i.m_offset}u;   // A's row: the output pixel",
                 f"const unsigned k = (unsigned)k_tile * {bk}u + {i.k_offset}u;   // A's column: tap x C + channel",
                 *_pixel(plan, "m"), *_tap(plan, "k"),
                 f"{helper}(map, smem + {i.smem_offset}u, mbar, c, {spatial_coords}, n, {offsets}"
                 f"{', policy' if hint else ''});"]
        body += ["  {", *(f"    {line}" for line in inner), "  }"]
    return "\n".join(['#include "pycute/tma.cuh"', "", *head,
                      f"constexpr unsigned {name}_expect_tx = {plan.expect_tx}u;",
                      f"__device__ __forceinline__ void {name}(const void* map, unsigned smem, unsigned mbar, "
                      f"int m_tile, int k_tile) {{", *body, "}"]) + "\n"



@provides("cuda", Im2colWPlan)
def emit_im2col_w_copy(plan: Im2colWPlan, name: str = "pycute_im2col_w_copy") -> str:
    """The issuing function of an im2col::w plan (sm_100a) and ``<name>_expect_tx``."""
    check_function_name(name)
    m = plan.tensor_map
    names = ["c", "w", "h", "d"][:m.rank - 1] + ["n"]
    params = ", ".join(f"int {v}" for v in names)
    return "\n".join(['#include "pycute/tma.cuh"', "",
                      f"// {plan.ptx} ({plan.rows} rows of {m.channels} channels: wHalo {plan.w_halo}, wOffset "
                      f"{plan.w_offset}), pycute C ABI {ABI_VERSION}; sm_100a",
                      f"// map: cuTensorMapEncodeIm2colWide of dims {m.global_dims}, W corners {m.lower[0]} .. "
                      f"{m.upper[0]}; coordinates innermost first (c, w, ..., n), w the first pixel's W position.",
                      f"constexpr unsigned {name}_expect_tx = {plan.expect_tx}u;",
                      f"__device__ __forceinline__ void {name}(const void* map, unsigned smem, unsigned mbar, "
                      f"{params}) {{",
                      f"  {im2col_helper(m.rank, m.mode)}(map, smem + {plan.smem_offset}u, mbar, {', '.join(names)}, "
                      f"{plan.w_halo}, {plan.w_offset});", "}"]) + "\n"


@provides("cuda", Gather4Plan)
def emit_gather4(plan: Gather4Plan, name: str = "pycute_tma_gather4") -> str:
    """The issuing function of a gather4 load (or scatter4 store, committed as one bulk group), sm_100a."""
    check_function_name(name)
    rows = "int r0, int r1, int r2, int r3"
    load = plan.direction == "load"
    lines = ['#include "pycute/tma.cuh"', "",
             f"// {plan.ptx} of 4 rows x {plan.tensor_map.box[0]} {plan.tensor_map.dtype}, pycute C ABI {ABI_VERSION}; "
             f"sm_100a",
             f"// map: dims {plan.tensor_map.global_dims} box {plan.tensor_map.box}; `col` the first column, r<i> the "
             f"rows."]
    if load:
        lines += [f"constexpr unsigned {name}_expect_tx = {plan.expect_tx}u;",
                  f"__device__ __forceinline__ void {name}(const void* map, unsigned smem, unsigned mbar, int col, "
                  f"{rows}) {{",
                  f"  pycute_tma_gather4(map, smem + {plan.smem_offset}u, mbar, col, r0, r1, r2, r3);", "}"]
    else:
        lines += [f"__device__ __forceinline__ void {name}(const void* map, unsigned smem, int col, {rows}) {{",
                  f"  pycute_tma_scatter4(map, smem + {plan.smem_offset}u, col, r0, r1, r2, r3);",
                  "  pycute_bulk_commit_group();", "}"]
    return "\n".join(lines) + "\n"
