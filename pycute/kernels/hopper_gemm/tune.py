"""The Hopper GEMM's configuration per shape, chosen by measurement (``pycute.kernels.tuner``): the candidates are
``choose``'s first guess, its neighbours (stages, the cluster, the raster's band height; ping-pong beside cooperative
at 128 x 128) and the other tile shapes ``choose`` ranks next; each is checked against the float64 product and timed
on the GPU present, and the fastest is remembered for the problem's shape class. ``tuned`` reads the record
(``config_for`` asks it before ``choose``)."""
from __future__ import annotations

from typing import Any, Callable

import attrs

from ...errors import LaunchError
from ..launcher import Launcher, sm_count, torch_module
from ..tuner import TuneResult, records, time_ms, tuning_key
from .config import HopperGemm, candidates, choose
from .plans import Dtype
from .runs import gemm_run

__all__ = ["neighbours", "ranked", "tune", "tuned", "KERNEL"]

KERNEL = "hopper_gemm"
_FIELDS = ("dtype", "BN", "m_blocks", "consumers", "mode", "stages", "cluster", "group")


def neighbours(g: HopperGemm) -> list[HopperGemm]:
    """Configurations one step from ``g``: the other cluster size, fewer stages, other band heights, and at
    128 x 128 the other way of sharing the tile."""
    out = [attrs.evolve(g, cluster=1 if g.cluster == 2 else 2), attrs.evolve(g, group=4), attrs.evolve(g, group=16)]
    stages = g.plans.mainloop.stages
    if stages > 2:
        out.append(attrs.evolve(g, stages=stages - 1))
    if (g.BM, g.BN) == (128, 128):
        out.append(HopperGemm(g.dtype, BN=128, m_blocks=2, mode="pingpong") if g.mode == "cooperative" else
                   HopperGemm(g.dtype, BN=128))
    return out


def ranked(M: int, N: int, K: int, dtype: Dtype, sms: int, count: int = 8) -> list[HopperGemm]:
    """Up to ``count`` distinct candidates, ``choose``'s first guess first, then its neighbours, then the other
    tile shapes."""
    first = choose(M, N, K, dtype, sms)
    out: list[HopperGemm] = []
    for g in [first, *neighbours(first), *candidates(dtype)]:
        if g not in out:
            out.append(g)
    return out[:count]


def _to_record(g: HopperGemm) -> dict:
    return {f: getattr(g, f) for f in _FIELDS}


def _from_record(r: dict) -> HopperGemm | None:
    try:
        return HopperGemm(**{f: r[f] for f in _FIELDS})
    except (KeyError, TypeError, ValueError):
        return None


def tuned(M: int, N: int, K: int, dtype: Dtype, device: str) -> HopperGemm | None:
    """The remembered winner of the problem's shape class on ``device`` (a device name), or None."""
    found = records().get(tuning_key(KERNEL, device, dtype, (M, N, K)))
    return _from_record(found["config"]) if found and isinstance(found.get("config"), dict) else None


def tune(M: int, N: int, K: int, dtype: Dtype = "bf16", device: int | None = None, count: int = 8,
         measure: Callable[[Callable[[], None]], float] = time_ms) -> TuneResult:
    """Time ``ranked``'s candidates on ``M x N x K`` on CUDA device ``device`` (default the current one), each checked
    first against the float64 product (a wrong or refused candidate is left out), and remember the fastest for
    the shape class."""
    torch = torch_module()
    if not torch.cuda.is_available():
        raise LaunchError("tuning needs a CUDA GPU: torch sees none")
    device = torch.cuda.current_device() if device is None else device
    name = torch.cuda.get_device_name(device)
    sms = sm_count(device)
    kind = torch.bfloat16 if dtype == "bf16" else torch.float8_e4m3fn
    unit = 8 if dtype == "bf16" else 16
    pitch = -(-K // unit) * unit
    gen = torch.Generator(device=f"cuda:{device}").manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, pitch, device=f"cuda:{device}", generator=gen).to(kind)[:, :K]
    b = torch.randn(N, pitch, device=f"cuda:{device}", generator=gen).to(kind)[:, :K]
    d = torch.empty(M, -(-N // 8) * 8, device=f"cuda:{device}", dtype=torch.bfloat16)
    ref = a.double() @ b.double().T
    times: list[tuple[Any, float | None]] = []
    for g in ranked(M, N, K, dtype, sms, count):
        try:
            run = gemm_run(g)
            launcher = Launcher.of(g, device)
            args = (run.map_a.encode(a), run.map_b.encode(b), run.map_d.encode(d), M, N, K, 1.0, *run.whole(M, N),
                    b"\0")
            grid = run.grid(M, N, sms * g.ctas_per_sm)
            d.fill_(float("nan"))
            launcher(grid, *args)
            err = float((d[:, :N].double() - ref).norm() / ref.norm())
            ok = err == err and err < (1e-2 if dtype == "bf16" else 2e-2)
            times.append((g, measure(lambda: launcher(grid, *args)) if ok else None))
        except LaunchError:
            times.append((g, None))
    timed = [(g, t) for g, t in times if t is not None]
    if not timed:
        raise LaunchError(f"tune: no candidate ran {M} x {N} x {K} {dtype} right on {name}")
    winner = min(timed, key=lambda x: x[1])[0]
    records().put(tuning_key(KERNEL, name, dtype, (M, N, K)),
                  {"config": _to_record(winner), "problem": [M, N, K],
                   "ms": {repr(g): t for g, t in times}})
    return TuneResult(winner, times[0][0], tuple(times))
