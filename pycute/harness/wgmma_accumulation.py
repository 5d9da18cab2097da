"""How Hopper's ``wgmma`` sums: many independent tiles, one CTA each, through one make_mma plan, D read back. Each
CTA fills shared memory with its A (64 x K) and B (N x K) element codes and loads its starting D (C) into the
accumulator registers, then calls the plan's function once (K / k-step instructions chained in one group) with its
own scale-d, and writes D back. Every (row, column) of every CTA is one observation of the instruction's
arithmetic: the K products of a row of A and a column of B, plus C.

``AccumulationKernel.model`` computes the same tiles under a ``WgmmaAccumulation`` (``pycute.sim.accumulate``), one
instruction at a time with D rounded between them, so ``tools/fp8_accumulation.py`` can compare the GPU's D with
candidate models, and ``run_cpu`` runs the kernel whole through ``pycute.interp.run_kernel`` (the emulator's
model)."""
from __future__ import annotations

import functools
from typing import Literal

import attrs
import numpy as np

from ..arch.sm90.wgmma import WARPGROUP_THREADS, WGMMA_M, WGMMA_TYPES, WgmmaAccumulation
from ..compile.runtime import Gpu, check_gpu
from ..dtypes import dtype as as_dtype
from ..mma.wgmma_fragment import wgmma_accumulator
from ..mma.wgmma_plan import WgmmaPlan
from ..mma.wgmma_planner import make_wgmma
from ..sim.accumulate import dot_sum
from ..sim.executors.wgmma import D_BITS, d_codes_of, d_values, pack_fragment, unpack_fragment
from ..sim.operand import decode
from ..sim.verify_wgmma import place_operands
from ..tensor.canonical import kmajor_smem_tensor

__all__ = ["AccumulationKernel", "Tiles", "kernels_source", "element_table", "encode", "accumulation_tiles", "KINDS"]

_CTYPE = {"f32": ("float", "__uint_as_float({})", "__float_as_uint({})"), "f16": ("unsigned", "{}", "{}")}


@attrs.frozen
class Tiles:
    """``ctas`` independent tiles: element codes ``a`` (ctas, 64, K) and ``b`` (ctas, N, K), C's codes ``c``
    (ctas, 64, N), each CTA's ``scale_d`` (0: D = A B^T) and a ``kind`` label per CTA (which generator made it)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    scale_d: np.ndarray
    kind: tuple[str, ...]

    @property
    def ctas(self) -> int:
        return int(self.a.shape[0])


@attrs.frozen
class AccumulationKernel:
    """A and B of types ``a`` / ``b`` (K-major, 128B swizzle), D of type ``d``, ``k`` elements of K per call (one
    instruction per k-step, chained), N ``n``."""

    a: str
    b: str
    d: str = "f32"
    k: int = 32
    n: int = 64

    @property
    def name(self) -> str:
        return f"{self.a}x{self.b}->{self.d} k{self.k}"

    @property
    def entry(self) -> str:
        return f"acc_{self.a}_{self.b}_{self.d}_k{self.k}"

    @property
    def step(self) -> int:
        """K per instruction."""
        return WGMMA_TYPES[self.a].k

    def plan(self) -> WgmmaPlan:
        swizzle: Literal["128B", "none"] = "128B" if self.k * WGMMA_TYPES[self.a].bits >= 1024 else "none"
        return make_wgmma(wgmma_accumulator(as_dtype(self.d), WGMMA_M, self.n),
                          kmajor_smem_tensor(self.a, WGMMA_M, self.k, swizzle),
                          kmajor_smem_tensor(self.b, self.n, self.k, swizzle))

    def _layout(self) -> tuple[int, int, int]:
        """(shared image bytes, D registers per thread, input bytes per CTA)."""
        p = self.plan()
        zeros = np.zeros
        ops = place_operands(p, zeros((WGMMA_M, self.k), np.uint64), zeros((self.n, self.k), np.uint64),
                             zeros((WGMMA_M, self.n), np.uint64))
        regs = p.d_registers
        return ops.image.size, regs, ops.image.size + 4 * (WARPGROUP_THREADS * regs + 4)

    @property
    def smem_bytes(self) -> int:
        return self._layout()[0] + 1024

    def source(self) -> str:
        """The plan's function and the kernel ``entry(const unsigned char* input, unsigned* out)``."""
        p, fn = self.plan(), f"{self.entry}_mma"
        smem, regs, per_cta = self._layout()
        ops = place_operands(p, np.zeros((WGMMA_M, self.k), np.uint64), np.zeros((self.n, self.k), np.uint64),
                             np.zeros((WGMMA_M, self.n), np.uint64))
        ctype, load, store = _CTYPE[self.d]
        return p.cuda(fn) + f"""
extern "C" __global__ void __launch_bounds__({WARPGROUP_THREADS}, 1) {self.entry}(const unsigned char* input,
                                                                             unsigned* out) {{
  extern __shared__ __align__(1024) unsigned char raw[];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  uint4* buf = reinterpret_cast<uint4*>(raw + (base - pycute_smem_address(raw)));
  const unsigned tid = threadIdx.x;
  const unsigned char* in = input + (unsigned long long)blockIdx.x * {per_cta}u;
  const uint4* image = reinterpret_cast<const uint4*>(in);
  for (unsigned i = tid; i < {smem // 16}u; i += blockDim.x) buf[i] = image[i];
  const unsigned* words = reinterpret_cast<const unsigned*>(in + {smem}u);
  {ctype} d[{regs}];
  for (unsigned r = 0; r < {regs}u; ++r) d[r] = {load.format(f"words[tid * {regs}u + r]")};
  const unsigned scale_d = words[{WARPGROUP_THREADS * regs}u];
  pycute_fence_proxy_async_shared();
  __syncthreads();
  pycute_wgmma_fence_operand(d);
  pycute_wgmma_fence();
  {fn}(base + {ops.smem_a}u, base + {ops.smem_b}u, d, scale_d);
  pycute_wgmma_commit_group();
  pycute_wgmma_wait_group<0>();
  pycute_wgmma_fence_operand(d);
  unsigned* o = out + (unsigned long long)blockIdx.x * {WARPGROUP_THREADS * regs}u;
  for (unsigned r = 0; r < {regs}u; ++r) o[tid * {regs}u + r] = {store.format("d[r]")};
}}
"""

    def pack(self, tiles: Tiles) -> np.ndarray:
        """The kernel's input bytes: per CTA the shared image, each thread's C registers, scale-d (padded)."""
        p = self.plan()
        smem, regs, per_cta = self._layout()
        out = np.zeros((tiles.ctas, per_cta), dtype=np.uint8)
        for i in range(tiles.ctas):
            ops = place_operands(p, tiles.a[i], tiles.b[i], tiles.c[i])
            words = np.zeros(WARPGROUP_THREADS * regs + 4, dtype=np.uint32)
            words[:WARPGROUP_THREADS * regs] = ops.d0_registers.astype(np.uint32).reshape(-1)
            words[WARPGROUP_THREADS * regs] = int(tiles.scale_d[i])
            out[i, :smem] = ops.image
            out[i, smem:] = words.view(np.uint8)
        return out.reshape(-1)

    def out_words(self, ctas: int) -> int:
        return ctas * WARPGROUP_THREADS * self._layout()[1]

    def unpack(self, out: np.ndarray, ctas: int) -> np.ndarray:
        """(ctas, 64, N) D codes from the kernel's output words."""
        p, regs = self.plan(), self._layout()[1]
        words = np.asarray(out, dtype=np.uint32).reshape(ctas, WARPGROUP_THREADS, regs)
        bits = D_BITS[self.d]
        return np.stack([unpack_fragment(w, p.fragment, WARPGROUP_THREADS, bits).reshape(self.n, WGMMA_M).T
                         for w in words])

    def model(self, tiles: Tiles, model: WgmmaAccumulation, step: int | None = None) -> np.ndarray:
        """(ctas, M, N) D codes under ``model``: one instruction per k-step, D rounded to its type between them (the
        generated function's first k-step takes the CTA's scale-d, the later ones accumulate); ``step`` K per
        rounding instead (the whole ``k``: chained instructions that carry an unrounded sum)."""
        a, b = decode(tiles.a, self.a), decode(tiles.b, self.b)
        d = d_values(tiles.c, self.d)
        step = step or self.step
        for s in range(0, self.k, step):
            ks = slice(s, s + step)
            d = np.stack([dot_sum(a[i][:, None, ks], b[i][None, :, ks], d[i] if s or tiles.scale_d[i] else None,
                                  self.a, self.b, self.d, model) for i in range(tiles.ctas)])
        return d_codes_of(d, self.d)

    def run_gpu(self, gpu: Gpu, tiles: Tiles, compiled) -> np.ndarray:
        """(ctas, 64, N) D codes from the GPU (``compiled``: a module holding this kernel's entry)."""
        gpu = check_gpu(gpu)
        out = gpu.run(compiled.cubin, self.entry, grid=tiles.ctas, block=WARPGROUP_THREADS,
                      dynamic_smem=self.smem_bytes, inputs=self.pack(tiles), out_words=self.out_words(tiles.ctas))
        return self.unpack(out, tiles.ctas)

    def run_cpu(self, tiles: Tiles, compiled) -> np.ndarray:
        """(ctas, 64, N) D codes from ``pycute.interp.run_kernel`` (the emulator's accumulation model)."""
        from ..interp import run_kernel
        out = np.full(self.out_words(tiles.ctas), 0xFFFFFFFF, dtype=np.uint32)
        run_kernel(compiled, self.entry, grid=tiles.ctas, block=WARPGROUP_THREADS, smem=self.smem_bytes,
                   args=[self.pack(tiles), out])
        return self.unpack(out, tiles.ctas)


def kernels_source(kernels: tuple[AccumulationKernel, ...]) -> str:
    """Every kernel in one translation unit (one NVRTC call)."""
    return "".join(k.source() for k in kernels)


@functools.lru_cache(maxsize=None)
def element_table(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(codes, values) of every finite code of an element type but -0, in increasing value."""
    bits = WGMMA_TYPES[name].bits
    codes = np.arange(1 << bits, dtype=np.uint64)
    with np.errstate(invalid="ignore", over="ignore"):
        values = decode(codes, name)
    keep = np.isfinite(values) & ~((values == 0) & np.signbit(values))
    order = np.argsort(values[keep], kind="stable")
    return codes[keep][order], values[keep][order]


def encode(values: np.ndarray, name: str) -> np.ndarray:
    """Codes of values exactly representable in an element type (-0 included); a ValueError names one that is
    not."""
    codes, table = element_table(name)
    v = np.asarray(values, dtype=np.float64)
    idx = np.clip(np.searchsorted(table, v), 0, len(table) - 1)
    if not np.array_equal(table[idx], v):
        raise ValueError(f"{float(v[table[idx] != v].reshape(-1)[0])!r} is not a {name} value")
    sign = np.uint64(1 << (WGMMA_TYPES[name].bits - 1))
    return np.where(np.signbit(v), codes[idx] | sign, codes[idx])


# ---- the tiles: crafted probes and random cases -------------------------------------------------------------------

#: Each CTA kind the experiment runs, and how many CTAs of it per kernel.
KINDS = (("single", 2), ("sets", 3), ("uniform", 4), ("unscaled", 2), ("gaussian", 5), ("cancel", 4),
         ("special", 2))
_F32_MAX_EXP = 127


def _window(kernel: AccumulationKernel) -> tuple[int, int]:
    """The exponents products may take for D's type: all of an f32 D's, a range an f16 D holds for f16."""
    return (-126, 127) if kernel.d == "f32" else (-20, 13)


def _values(rng: np.random.Generator, name: str, shape: tuple, lo: float, hi: float, rich: float = 0.5) -> np.ndarray:
    """Random nonzero values of an element type with magnitudes in [lo, hi); a fraction ``rich`` of them with every
    significand bit set (the most bits an alignment can cut)."""
    _, table = element_table(name)
    pool = table[(np.abs(table) >= lo) & (np.abs(table) < hi) & (table != 0)]
    full = pool[np.isin(np.abs(pool), _rich(name))]
    out = rng.choice(pool, size=shape)
    if full.size:
        out = np.where(rng.random(shape) < rich, rng.choice(full, size=shape), out)
    return out


def _rich(name: str) -> np.ndarray:
    _, table = element_table(name)
    man = {"f8e4m3": 3, "f8e5m2": 2, "bf16": 7, "f16": 10}[name]
    m, _ = np.frexp(np.abs(table[table > 0]))
    return table[table > 0][np.isclose(m, 1 - 2.0 ** -(man + 1))]


def _d_round(values: np.ndarray, d: str) -> np.ndarray:
    """Values rounded to nearest into D's type (as float64 values)."""
    with np.errstate(over="ignore"):
        return values.astype(np.float32 if d == "f32" else np.float16).astype(np.float64)


def _c_near(rng: np.random.Generator, ref: np.ndarray, d: str, gaps: tuple[int, int]) -> np.ndarray:
    """C values 2^-g times ``ref`` (g uniform in ``gaps``) with a random significand and sign, in D's type."""
    g = rng.integers(gaps[0], gaps[1] + 1, size=ref.shape)
    sig = rng.choice(np.array([1.0, 2 - 2.0 ** -23, 1 + 2.0 ** -23, 1.5, 1 + 2.0 ** -12]), size=ref.shape)
    sig = np.where(rng.random(ref.shape) < 0.4, 1 + rng.random(ref.shape), sig)
    sign = np.where(rng.random(ref.shape) < 0.5, -1.0, 1.0)
    c = _d_round(sign * np.abs(ref) * np.exp2(-g.astype(np.float64)) * sig, d)
    lo, hi = (2.0 ** -149, 2.0 ** 127) if d == "f32" else (2.0 ** -24, 2.0 ** 15)
    return np.where((np.abs(c) < lo) | (np.abs(c) > hi) | ~np.isfinite(c), 0.0, c)


def _sets(kernel: AccumulationKernel, rng: np.random.Generator) -> list[list[int]]:
    """64 sets of k positions: a pair with position 0 for every position of the first instruction, the first
    2^j positions, pairs and triples across the block boundaries a hardware adder might have (4, 8, 16) and across
    instructions, and random sets."""
    k, step = kernel.k, kernel.step
    sets = [[0]] + [[0, p] for p in range(1, step)] + [list(range(1 << j)) for j in range(1, 8) if 1 << j <= k]
    for h in (4, 8, 16):
        if h < step:
            sets += [[h - 1, h], [0, h - 1, h], [1, h, h + 1]]
    for s in range(step, k, step):
        sets += [[0, s], [s - 1, s], [0, 1, s]]
    while len(sets) < kernel.n:
        sets.append(sorted(rng.choice(k, size=int(rng.integers(2, min(k, 12))), replace=False).tolist()))
    return sets[:kernel.n]


def accumulation_tiles(kernel: AccumulationKernel, seed: int = 0) -> Tiles:
    """The experiment's CTAs for ``kernel`` (``KINDS``), deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    parts = [_tiles(kind, kernel, rng) for kind, count in KINDS for _ in range(count)]
    return Tiles(np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts]), np.stack([p[2] for p in parts]),
                 np.array([p[3] for p in parts], dtype=np.uint32), tuple(kind for kind, count in KINDS
                                                                        for _ in range(count)))


def _tiles(kind: str, kern: AccumulationKernel, rng: np.random.Generator) -> tuple:
    m, n, k, d = WGMMA_M, kern.n, kern.k, kern.d
    lo, hi = _window(kern)
    # each operand's share of the product window: magnitudes in [2^(lo/2), 2^(hi/2))
    alo, ahi = 2.0 ** (lo // 2), 2.0 ** (hi // 2)
    one_b = 1.0
    scale = 1
    if kind == "single":                # column j multiplies only k = j % K by 1: D = a[i, j % K] + C[i, j]
        a = _values(rng, kern.a, (m, k), alo, ahi)
        b = np.zeros((n, k))
        b[np.arange(n), np.arange(n) % k] = one_b
        c = _c_near(rng, a[:, np.arange(n) % k], d, (-34, 34))
        a[-4:] = 0.0                    # rows 60..63: C alone (every product zero)
        c[-4:] = _d_round((1 + rng.random((4, n))) * np.exp2(rng.integers(-20, 20, size=(4, n))), d)
    elif kind == "sets":                # column j sums the products at a set of k; row i: one large term, small ones
        sets = _sets(kern, rng)
        tiny = np.min(np.abs(_values(rng, kern.b, (64,), 2.0 ** -60, 2.0 ** -1, rich=0.0)))
        b = np.zeros((n, k))
        for j, s in enumerate(sets):
            b[j, s] = one_b
            if j % 2:                           # odd columns scale all but the set's first term down
                b[j, s[1:]] = tiny
        big = np.abs(_values(rng, kern.a, (m,), max(alo, 2.0 ** -2), ahi))
        gap = rng.integers(1, 18, size=m)
        small = _nearest(kern.a, (big * 2.0 ** -gap)[:, None] * (1 + rng.random((m, k))))
        a = np.where(rng.random((m, k)) < 0.3, -small, small)
        a[:, 0] = big
        same = np.arange(m) >= 40                # rows 40..: every term in one binade, the last one small
        a[same] = np.abs(_values(rng, kern.a, (int(same.sum()), k), 1.0, 2.0, rich=0.8)) * \
            np.where(rng.random((int(same.sum()), k)) < 0.2, -1, 1)
        a[same, -1] = a[same, -1] * 2.0 ** -4
        ref = np.abs(a[:, :1]) * np.ones((1, n))
        c = np.where(np.arange(m)[:, None] % 4 == 0, 0.0, _c_near(rng, ref, d, (-8, 30)))
    elif kind in ("uniform", "unscaled"):
        a = _values(rng, kern.a, (m, k), alo, ahi, rich=0.2)
        b = _values(rng, kern.b, (n, k), alo, ahi, rich=0.2)
        a = np.where(rng.random((m, k)) < 0.5, -a, a)
        ref = np.exp2(rng.integers(lo // 2, hi // 2, size=(m, n)).astype(np.float64))
        c = np.where(rng.random((m, n)) < 0.25, 0.0, _c_near(rng, ref, d, (-3, 3)))
        scale = 0 if kind == "unscaled" else 1
    elif kind == "gaussian":           # the data of a GEMM: D already larger than one k-step's products
        a = _nearest(kern.a, rng.standard_normal((m, k)))
        b = _nearest(kern.b, rng.standard_normal((n, k)))
        c = _d_round(rng.standard_normal((m, n)) * np.exp2(rng.integers(0, 10, size=(m, n))), d)
    elif kind == "cancel":             # C nearly cancels the products: the low bits decide
        a = _nearest(kern.a, rng.standard_normal((m, k)))
        b = _nearest(kern.b, rng.standard_normal((n, k)))
        exact = a[:, :kern.step] @ b[:, :kern.step].T
        c = _d_round(-exact * (1 + rng.integers(-4, 5, size=(m, n)) * 2.0 ** -22), d)
    else:                               # special values: NaN, infinities, subnormals, signed zeros
        return _special(kern, rng)
    return encode(a, kern.a), encode(b, kern.b), d_codes_of(c, d), scale


def _nearest(name: str, x: np.ndarray) -> np.ndarray:
    """The element values nearest ``x`` (ties to either), clamped to the type's finite range."""
    _, table = element_table(name)
    x = np.asarray(x, dtype=np.float64)
    i = np.clip(np.searchsorted(table, x), 1, len(table) - 1)
    return np.where(np.abs(table[i] - x) < np.abs(table[i - 1] - x), table[i], table[i - 1])


def _special(kern: AccumulationKernel, rng: np.random.Generator) -> tuple:
    m, n, k, d = WGMMA_M, kern.n, kern.k, kern.d
    lo, hi = _window(kern)
    a = encode(_values(rng, kern.a, (m, k), 2.0 ** (lo // 2), 2.0 ** (hi // 2)), kern.a)
    b = encode(_values(rng, kern.b, (n, k), 2.0 ** (lo // 2), 2.0 ** (hi // 2)), kern.b)
    codes_a, values_a = element_table(kern.a)
    codes_b, values_b = element_table(kern.b)
    bits = WGMMA_TYPES[kern.a].bits
    nan_a = {8: 0x7F, 16: 0x7FC0}[bits] if kern.a != "f8e5m2" else 0x7E
    nan_b = {8: 0x7F, 16: 0x7FC0}[WGMMA_TYPES[kern.b].bits] if kern.b != "f8e5m2" else 0x7E
    sub_a = codes_a[(values_a > 0) & (values_a < 2.0 ** (-6 if kern.a == "f8e4m3" else -14 if kern.a in (
        "f8e5m2", "f16") else -126))]
    sub_b = codes_b[(values_b > 0) & (values_b < 2.0 ** (-6 if kern.b == "f8e4m3" else -14 if kern.b in (
        "f8e5m2", "f16") else -126))]
    for row in range(0, m, 8):          # rows 8r: a NaN, 8r+1: subnormals, 8r+2: zeros of both signs, 8r+3: inf
        a[row, row % k] = nan_a
        a[row + 1] = rng.choice(sub_a, size=k) | (np.uint64(1 << (bits - 1)) * rng.integers(0, 2, size=k).astype(
            np.uint64))
        a[row + 2] = np.uint64(1 << (bits - 1)) * rng.integers(0, 2, size=k).astype(np.uint64)
        if kern.a in ("f8e5m2", "f16", "bf16"):
            a[row + 3, 0] = {"f8e5m2": 0x7C, "f16": 0x7C00, "bf16": 0x7F80}[kern.a]
    b[1] = rng.choice(sub_b, size=k)
    b[2, : k // 2] = nan_b
    b[3] = 0
    c_special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -130, -(2.0 ** -140), 3.0e38, 2.0 ** -149],
                         dtype=np.float64) if d == "f32" else \
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -20, -(2.0 ** -24), 65504.0, 2.0 ** -15])
    c = rng.choice(c_special, size=(m, n))
    c_codes = d_codes_of(c, d)
    nan = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}[d]
    c_codes = np.where(np.isnan(c), nan, c_codes).astype(np.uint64)
    return a, b, c_codes, 1
