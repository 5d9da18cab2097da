"""The online softmax of a consumer warpgroup, written against its fragments' plans (never a register index): S's
values are masked by their (row, column) (``fragment_coords``), reduced along their rows (``make_reduction``: the
quad's shuffles), exponentiated per row slot; O's values rescaled by their row slot's scale; P converted from S
by ``make_fragment_convert`` (the P V MMA's A fragment).

Per row slot (``s_row_slots`` rows a thread: a state array's index) the warpgroup keeps the running max ``m`` and
sum ``l`` of its rows (FlashAttention's online softmax, in base 2: ``scale_log2 = scale * log2 e``):

    m' = max(m, max_j s_j);   c = 2^((m - m') scale_log2);
    p_j = 2^(s_j scale_log2 - m' scale_log2);   l' = c l + sum_j p_j

and O is rescaled by ``c`` once the previous P V has landed. A row that has seen only masked keys keeps ``m = -inf``
(its exponent base is taken as 0 so that no ``-inf - -inf`` appears): its ``p`` are 0 and, at the end, its O is 0 and
its log-sum-exp ``-inf``. The sums stay per thread until the end (``_sum_partial``); the lanes that share a row add
theirs once (``_allreduce_sum``), in ``attn_finish``.
"""
from __future__ import annotations

import attrs

from ...errors import PlanError
from ...mma import FragmentConvertPlan, ReducePlan, make_fragment_convert, make_reduction
from ...tensor import FragmentCoords, RegisterFragment, fragment_coords

__all__ = ["OnlineSoftmax"]

_LN2 = "0.6931471805599453f"


@attrs.frozen
class OnlineSoftmax:
    """``attn_registers`` (S, O, P and the per-row state), ``attn_mask``, ``attn_softmax``, ``attn_rescale``,
    ``attn_to_p`` and ``attn_finish`` for a warpgroup's ``64 x block_n`` S (f32 accumulator), its ``64 x head_dim``
    O and P (the P V MMA's A fragment), S's columns the ``block_n`` keys of block ``n``."""

    s: RegisterFragment
    o: RegisterFragment
    p: RegisterFragment
    block_n: int

    @property
    def rows(self) -> ReducePlan:
        """S's reductions along its rows."""
        return make_reduction(self.s)

    @property
    def to_p(self) -> FragmentConvertPlan:
        return make_fragment_convert(self.p, self.s)

    def check(self) -> None:
        """What the functions rely on, from the fragments: O's row slots are S's rows (one per-row state serves
        both), and one lane per row has column base 0 (it writes the row's log-sum-exp)."""
        check_row_state(fragment_coords(self.s), fragment_coords(self.o), "attention")

    def cuda(self) -> str:
        self.check()
        s = fragment_coords(self.s)
        p_registers = fragment_coords(self.p).values * self.p.dtype.bits // 32
        return "\n".join([s.cuda("s"), fragment_coords(self.o).cuda("o"), self.rows.cuda("s"), self.to_p.cuda("s_to_p"),
                          *_state(p_registers), *self._mask(), *_step(), *self._finish()]) + "\n"

    def _mask(self) -> list[str]:
        return ["// Scores past each query's last key (past seqlen_k, or past the causal diagonal) become -inf.",
                "__device__ __forceinline__ void attn_mask(attn_registers& r, unsigned t, const attn_tile& tile, "
                "unsigned warpgroup, int n) {",
                "  pycute_wgmma_fence_operand(r.s);          // S's reads and writes after the wait that landed it",
                f"  const int row0 = attn_first_row(tile, warpgroup), col0 = n * {self.block_n};",
                "  s_for_each(t, [&](int v, int row, int col) {",
                "    if (col0 + col > attn_last_key(row0 + row, tile.seqlen_q, tile.seqlen_k)) r.s[v] = -attn_inf();",
                "  });", "}"]

    def _finish(self) -> list[str]:
        """O normalised and each row's log-sum-exp, written by the row's lane whose columns start at 0."""
        s = fragment_coords(self.s)
        out = ["// The tile's end: the rows' sums over their lanes, O normalised (a row with no key: 0), and the",
               "// log-sum-exp of each row below seqlen_q (natural log of the scaled scores; -inf for no key), written",
               "// by the lane whose columns start at 0.",
               "__device__ __forceinline__ void attn_finish(attn_registers& r, float* lse, unsigned t, "
               "const attn_tile& tile, unsigned warpgroup, float scale_log2) {",
               "  pycute_wgmma_fence_operand(r.o);",
               "  s_row_allreduce_sum(r.sum);",
               "  float inv[s_row_slots];",
               "#pragma unroll",
               "  for (int i = 0; i < s_row_slots; ++i) inv[i] = r.sum[i] > 0.f ? 1.f / r.sum[i] : 0.f;",
               "#pragma unroll   // a row that saw no key is 0, whatever its masked products held",
               "  for (int v = 0; v < o_values; ++v) r.o[v] = inv[o_row_slot(v)] > 0.f ? r.o[v] * inv[o_row_slot(v)] "
               ": 0.f;",
               *lse_lines(s, "warpgroup")]
        return out + ["}"]


def check_row_state(s: FragmentCoords, o: FragmentCoords, kernel: str) -> None:
    """What the softmax functions rely on, from S's and O's fragment coordinates: O's row slots are S's rows thread
    by thread (one per-row state rescales both), and one lane per row has column base 0 (it writes the row's
    log-sum-exp)."""
    s_rows = s.row[:, [v[0] for v in s.slots("row")]]
    o_rows = o.row[:, [v[0] for v in o.slots("row")]]
    if s_rows.shape != o_rows.shape or (s_rows != o_rows).any():
        raise PlanError(f"{kernel}: O's row slots are not S's rows (thread by thread); the rescale of O takes S's "
                        f"per-row state")
    for row in range(s.shape[0]):
        if sum(int(s.thread_col[t]) == 0 for t in s.threads_of_row(row)) != 1:
            raise PlanError(f"{kernel}: row {row} has no single lane whose columns start at 0 (its log-sum-exp "
                            f"writer)")


def lse_lines(s: FragmentCoords, warpgroup: str) -> list[str]:
    """The log-sum-exp of each of a thread's S rows written by the row's lane of column base 0 (rows past the
    sequence skipped; a row that saw no key is -inf), ``warpgroup`` the C expression of the tile's row block."""
    out = ["  if (s_col_thread(t) != 0) return;", "  float* out = attn_lse_row(lse, tile);",
           f"  const int row = attn_first_row(tile, {warpgroup}) + s_row_thread(t);"]
    for i, vs in enumerate(s.slots("row")):
        off = int(s.value_row[vs[0]])
        out += [f"  if (row + {off} < tile.seqlen_q)",
                f"    out[row + {off}] = r.sum[{i}] > 0.f ? (r.max[{i}] * scale_log2 + log2f(r.sum[{i}])) * {_LN2} "
                f": -attn_inf();"]
    return out


def _state(p_registers: int) -> list[str]:
    return [f"constexpr int p_registers = {p_registers};",
            "// A consumer warpgroup's registers: S, O, P and, per row slot, the running max, sum and the last step's "
            "rescale.",
            "struct attn_registers {",
            "  float s[s_values], o[o_values];", "  unsigned p[p_registers];",
            "  float max[s_row_slots], sum[s_row_slots], scale[s_row_slots];", "};", *math_lines()]


def math_lines() -> list[str]:
    """``attn_inf`` and ``attn_exp2`` (``ex2.approx.ftz.f32``, PTX ISA #floating-point-instructions-ex2)."""
    return ["__device__ __forceinline__ float attn_inf() { return __int_as_float(0x7f800000); }   // +infinity",
            "__device__ __forceinline__ float attn_exp2(float x) {",
            '  float y;', '  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));', "  return y;", "}"]


def _step() -> list[str]:
    """The online softmax's step, O's rescale and P's conversion."""
    return [*online_step(fence=True),
            "// O's rows rescaled by the last step's scale (once the P V that wrote O has landed).",
            "__device__ __forceinline__ void attn_rescale(attn_registers& r) {",
            "  pycute_wgmma_fence_operand(r.o);          // after the wait that landed O, before its next MMA",
            "#pragma unroll", "  for (int v = 0; v < o_values; ++v) r.o[v] *= r.scale[o_row_slot(v)];",
            "  pycute_wgmma_fence_operand(r.o);", "}",
            "// P = S in the P V MMA's A fragment (once the P V that read the last P has landed).",
            "__device__ __forceinline__ void attn_to_p(attn_registers& r) {",
            "  s_to_p(r.s, r.p);",
            "  pycute_wgmma_fence_operand(r.p);          // P written before the fence of its MMA", "}"]


def online_step(fence: bool) -> list[str]:
    """``attn_softmax``: one step of the online softmax over ``attn_registers``' S (``fence``: keep the compiler's
    reads and writes of S after the wgmma wait, ``pycute_wgmma_fence_operand``; tcgen05.ld's registers need none:
    the wait is in the load's function)."""
    return ["// One step of the online softmax (`first`: the tile's first, from an empty state): the rows' new max,",
            "// the rescale of the old state, p = 2^(s scale_log2 - max scale_log2) in place, the rows' sums (per",
            "// thread).",
            "__device__ __forceinline__ void attn_softmax(attn_registers& r, float scale_log2, bool first) {",
            *(["  pycute_wgmma_fence_operand(r.s);"] if fence else []),
            "  float m[s_row_slots], base[s_row_slots];",
            "#pragma unroll", "  for (int i = 0; i < s_row_slots; ++i) m[i] = first ? -attn_inf() : r.max[i];",
            "  s_row_max(r.s, m);",
            "#pragma unroll", "  for (int i = 0; i < s_row_slots; ++i) {",
            "    base[i] = m[i] == -attn_inf() ? 0.f : m[i] * scale_log2;     // a row that saw only masked keys",
            "    r.scale[i] = first ? 0.f : attn_exp2(r.max[i] * scale_log2 - base[i]);",
            "    r.sum[i] = first ? 0.f : r.sum[i] * r.scale[i];", "    r.max[i] = m[i];", "  }",
            "#pragma unroll",
            "  for (int v = 0; v < s_values; ++v) r.s[v] = attn_exp2(fmaf(r.s[v], scale_log2, -base[s_row_slot(v)]));",
            "  s_row_sum_partial(r.s, r.sum);", "}"]
