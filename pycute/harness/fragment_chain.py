"""The accumulator as the next MMA's operand on a GPU (docs/fragments.md): ``S = Q K^T`` with wgmma (Q, K in shared
memory), S converted by a ``make_fragment_convert`` plan into the A fragment P, ``O = P V`` with wgmma reading A
from registers (V^T in shared memory, its K rows permuted as the plan's columns are); S, P and O written back. S
must be the emulator's and the exact product, P the conversion's reference of the S the GPU computed, O the
emulator's from that P and ``round(S) V`` exactly: the operands keep every sum exact (small integers; fp8's
reduced-precision accumulation stays far away) while S has more significant bits than P's type, so the rounding is
exercised. ``CHAIN_CASES`` is what ``tools/fragments_roundtrip.py`` runs."""
from __future__ import annotations

from typing import Literal

import attrs
import numpy as np

from ..arch.sm90.wgmma import WARPGROUP_THREADS, WGMMA_TYPES
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..dtypes import dtype as as_dtype
from ..errors import CompileError
from ..mma.convert import Columns, FragmentConvertPlan, make_fragment_convert
from ..mma.wgmma_fragment import wgmma_a_fragment, wgmma_accumulator
from ..mma.wgmma_plan import WgmmaPlan
from ..mma.wgmma_planner import make_wgmma
from ..sim.convert import round_f32
from ..sim.executors.wgmma import unpack_fragment
from ..sim.operand import decode, reference_mma
from ..sim.verify_mma import write_tile
from ..sim.verify_wgmma import WgmmaOperands, emulate_wgmma
from ..tensor.canonical import kmajor_smem_tensor
from ..tensor.smem import SmemTensor
from ..tensor.values import smem_bytes_needed

__all__ = ["ChainRoundTrip", "ChainCase", "CHAIN_CASES"]


def _swizzle(row_bytes: int) -> Literal["128B", "64B", "32B"]:
    return "128B" if row_bytes >= 128 else "64B" if row_bytes >= 64 else "32B"


def _tile(dtype: str, rows: int, k: int) -> SmemTensor:
    return kmajor_smem_tensor(dtype, rows, k, _swizzle(k * as_dtype(dtype).bits // 8))


def _codes(dtype: str, values: np.ndarray) -> np.ndarray:
    """Element codes of exactly representable values."""
    return round_f32(values.astype(np.float32), dtype).astype(np.uint64)


#: Q's and K's integer ranges: S = Q K^T (d <= 64) exceeds P's significant bits often (bf16 8, f16 11, fp8 4 or 3),
#: and O = P V (V: 0, +-1/2, +-1; fp8 0, +-1) stays exact in f32 for n <= 256 (bf16 |O| <= 2^21 in halves), n <= 128
#: (f16: 2^22), and within ~2^13 (fp8, whose MMA accumulates with fewer bits).
_LIMITS = {"bf16": (32, 4), "f16": (64, 8), "fp8": (2, 2)}


def _aligned(n: int) -> int:
    return -(-n // 1024) * 1024


@attrs.frozen
class ChainCase:
    """S = Q K^T (Q ``m`` x ``d``, K ``n`` x ``d``, ``dtype``), P = convert(S) (``columns``), O = P V (V ``n`` x
    ``dv``, O ``m`` x ``dv``)."""

    dtype: str
    m: int = 64
    n: int = 64
    d: int = 64
    dv: int = 64
    columns: Columns = "same"

    @property
    def name(self) -> str:
        return f"{self.dtype} m{self.m} n{self.n} d{self.d} dv{self.dv} {self.columns}"

    def roundtrip(self) -> "ChainRoundTrip":
        q, k, vt = _tile(self.dtype, self.m, self.d), _tile(self.dtype, self.n, self.d), _tile(self.dtype, self.dv,
                                                                                                self.n)
        qk = make_wgmma(wgmma_accumulator("f32", self.m, self.n), q, k)
        convert = make_fragment_convert(wgmma_a_fragment(self.dtype, self.m, self.n), qk.d, self.columns)
        pv = make_wgmma(wgmma_accumulator("f32", self.m, self.dv), convert.dst, vt)
        return ChainRoundTrip(qk, convert, pv)


@attrs.frozen
class ChainRoundTrip:
    """``qk`` (S = Q K^T), ``convert`` (S -> P, the A fragment of ``pv``) and ``pv`` (O = P V) in one kernel."""

    qk: WgmmaPlan
    convert: FragmentConvertPlan
    pv: WgmmaPlan

    def __attrs_post_init__(self) -> None:
        if not (isinstance(self.qk, WgmmaPlan) and isinstance(self.convert, FragmentConvertPlan)
                and isinstance(self.pv, WgmmaPlan)):
            raise CompileError("ChainRoundTrip: a wgmma plan, a fragment conversion and a wgmma plan")
        if self.convert.src != self.qk.d or self.pv.a != self.convert.dst or self.qk.a_in_registers:
            raise CompileError("ChainRoundTrip: the conversion takes qk's accumulator and gives pv's A fragment; qk "
                               "reads A from shared memory")

    @property
    def threads(self) -> int:
        return WARPGROUP_THREADS * self.qk.warpgroups

    @property
    def dtype(self) -> str:
        return self.convert.dst.dtype.name

    @property
    def layout(self) -> tuple[int, int, int, int]:
        """Shared byte offsets of Q, K and V^T, and the bytes used."""
        q = _aligned(smem_bytes_needed(self.qk.a.tensor))         # type: ignore[union-attr]
        k = _aligned(smem_bytes_needed(self.qk.b.tensor))
        v = _aligned(smem_bytes_needed(self.pv.b.tensor))
        return 0, q, q + k, q + k + v

    @property
    def words(self) -> tuple[int, int, int]:
        """Per thread: S's, P's and O's registers."""
        return self.qk.d_registers, self.convert.dst_registers, self.pv.d_registers

    @property
    def out_words(self) -> int:
        return self.threads * sum(self.words)

    def operands(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Q, K, V (values) and their codes, V^T's tile codes with K permuted as P's columns, the shared image."""
        rng = np.random.default_rng(seed)
        m, n, d = self.qk.shape
        dv = self.pv.shape[1]
        fp8 = WGMMA_TYPES[self.dtype].family == "fp8"
        q_lim, k_lim = _LIMITS["fp8" if fp8 else self.dtype]
        q = rng.integers(-q_lim, q_lim + 1, (m, d)).astype(np.float64)
        k = rng.integers(-k_lim, k_lim + 1, (n, d)).astype(np.float64)
        v = (rng.integers(-1, 2, (n, dv)) if fp8 else rng.integers(-2, 3, (n, dv)) / 2.0).astype(np.float64)
        vt_tile = v.T[:, list(self.convert.permutation)]          # B's (n, k): V^T with P's column order
        image = np.zeros(self.layout[3], dtype=np.uint8)
        sq, sk, sv, _ = self.layout
        write_tile(image, sq, self.qk.a.tensor, _codes(self.dtype, q))   # type: ignore[union-attr]
        write_tile(image, sk, self.qk.b.tensor, _codes(self.dtype, k))
        write_tile(image, sv, self.pv.b.tensor, _codes(self.dtype, vt_tile))
        return {"q": q, "k": k, "v": v, "vt_tile": vt_tile, "image": image}

    def source(self, entry: str = "chain_roundtrip") -> str:
        sq, sk, sv, _ = self.layout
        ns, np_, no = self.words
        wg = ", pycute_warpgroup_index()" if self.qk.warpgroups > 1 else ""
        return ('#include "pycute/wgmma.cuh"\n' + self.qk.cuda("chain_qk") + self.convert.cuda("chain_convert")
                + self.pv.cuda("chain_pv") + f"""
extern "C" __global__ void __launch_bounds__({self.threads}, 1) {entry}(const unsigned char* input, unsigned* out) {{
  extern __shared__ __align__(1024) unsigned char raw[];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned tid = threadIdx.x;
  for (unsigned i = tid; i < {self.layout[3]}u; i += blockDim.x) buf[i] = input[i];
  pycute_fence_proxy_async_shared();     // the generic stores, before wgmma (the async proxy) reads them
  __syncthreads();
  float s[{ns}], o[{no}];
  unsigned p[{np_}];
  for (int r = 0; r < {ns}; ++r) s[r] = 0.0f;
  for (int r = 0; r < {no}; ++r) o[r] = 0.0f;
  pycute_wgmma_fence_operand(s);
  pycute_wgmma_fence();
  chain_qk(base + {sq}u, base + {sk}u, s, 0u{wg});
  pycute_wgmma_commit_group();
  pycute_wgmma_wait_group<0>();
  pycute_wgmma_fence_operand(s);
  chain_convert(s, p);
  pycute_wgmma_fence_operand(o);
  pycute_wgmma_fence();                  // P's registers, written by the thread, before wgmma reads them
  chain_pv(p, base + {sv}u, o, 0u{wg});
  pycute_wgmma_commit_group();
  pycute_wgmma_wait_group<0>();
  pycute_wgmma_fence_operand(o);
  unsigned* mine = out + tid * {ns + np_ + no}u;
  for (int r = 0; r < {ns}; ++r) mine[r] = __float_as_uint(s[r]);
  for (int r = 0; r < {np_}; ++r) mine[{ns} + r] = p[r];
  for (int r = 0; r < {no}; ++r) mine[{ns + np_} + r] = __float_as_uint(o[r]);
}}
""")

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    @property
    def smem_bytes(self) -> int:
        return self.layout[3] + 1024

    def split(self, out: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(S, P, O) registers, each (threads, registers) uint32."""
        ns, np_, _ = self.words
        regs = np.asarray(out, dtype=np.uint32).reshape(self.threads, -1)
        return regs[:, :ns], regs[:, ns:ns + np_], regs[:, ns + np_:]

    def _mma_ops(self, plan: WgmmaPlan, ops: dict, a_registers: np.ndarray | None) -> WgmmaOperands:
        zeros = np.zeros((self.threads, plan.d_registers), dtype=np.uint32)
        sq, sk, sv, _ = self.layout
        empty = np.zeros(0, dtype=np.uint64)
        return WgmmaOperands(ops["image"], None if a_registers is not None else sq, sv if plan is self.pv else sk,
                             empty, empty, a_registers, empty, zeros)

    def check(self, out: np.ndarray, seed: int = 0) -> dict:
        """Every comparison of a run's ``out``: counts of differing registers and elements (0 when right)."""
        s_got, p_got, o_got = self.split(out)
        ops = self.operands(seed)
        m, n, _ = self.qk.shape
        dv = self.pv.shape[1]
        s_emu = emulate_wgmma(self.qk, self._mma_ops(self.qk, ops, None), False)
        s_exact = (ops["q"] @ ops["k"].T).astype(np.float32)
        s_elems = unpack_fragment(s_got, self.qk.fragment, self.threads, 32).reshape(n, m).T
        p_want = self.convert.reference(s_got)
        o_emu = emulate_wgmma(self.pv, self._mma_ops(self.pv, ops, p_want), False)
        p_exact = round_f32(s_exact, self.dtype).astype(np.uint64)          # round(S), S's own column order
        o_exact = reference_mma(p_exact, _codes(self.dtype, ops["v"].T), self.dtype, self.dtype).astype(np.float32)
        o_elems = unpack_fragment(o_got, self.pv.fragment, self.threads, 32).reshape(dv, m).T
        return {"s_emulator": int((s_got != s_emu).sum()),
                "s_exact": int((s_elems.astype(np.uint32) != s_exact.view(np.uint32)).sum()),
                "p_reference": int((p_got != p_want).sum()),
                "p_emulated": int((self.convert.emulate(s_got) != p_want).sum()),
                "o_emulator": int((o_got != o_emu).sum()),
                "o_exact": int((o_elems.astype(np.uint32) != o_exact.view(np.uint32)).sum()),
                "s_rounded": int((s_exact != decode(p_exact, self.dtype).astype(np.float32)).sum()),
                "elements": int(m * n + m * dv)}

    def input(self, seed: int = 0) -> np.ndarray:
        return self.operands(seed)["image"]

    def run(self, gpu: Gpu, seed: int = 0, arch: str = "sm_90a") -> np.ndarray:
        return check_gpu(gpu).run(self.compile(arch).cubin, "chain_roundtrip", grid=1, block=self.threads,
                                  dynamic_smem=self.smem_bytes, inputs=self.input(seed), out_words=self.out_words)


#: The chain round trips: bf16 and f16 (no shuffle), e4m3 / e5m2 with shuffles and with permuted columns, two
#: warpgroups, the widest S.
CHAIN_CASES: tuple[ChainCase, ...] = (
    ChainCase("bf16"), ChainCase("f16", n=128), ChainCase("bf16", m=128, n=128, dv=128),
    ChainCase("f8e4m3", d=32), ChainCase("f8e4m3", d=32, columns="permuted"),
    ChainCase("f8e5m2", n=128, d=32, dv=32), ChainCase("f8e4m3", m=128, n=256, d=32, columns="permuted"),
    ChainCase("bf16", n=256, d=16, dv=16),
)
