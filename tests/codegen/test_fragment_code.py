"""The coordinate helpers of a fragment (pycute.codegen.fragment): ``<name>_row(t, v)`` / ``<name>_col(t, v)`` and
``<name>_for_each`` cost in an unrolled loop exactly what the hand-derived formula costs (the same SASS), with no
local memory; the slot helpers are ``constexpr``."""
import pytest

import pycute as pc
from pycute import CompileError
from pycute.compile import compile_cuda
from pycute.compile.sass import function_instructions, opcode_histogram

STORE = """extern "C" __global__ void {entry}(const float* in, float* out, int ld, int n) {{
  const unsigned t = threadIdx.x;
  float d[{values}];
#pragma unroll
  for (int v = 0; v < {values}; ++v) d[v] = in[t * {values} + v];
{body}
}}
"""
# a masked store of the accumulator, written three ways: the hand-derived formula (PTX's figure), the helpers, the
# iteration helper
HAND = """#pragma unroll
  for (int v = 0; v < {values}; ++v) {{
    int row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((v / 2) % 2), col = 8 * (v / 4) + 2 * (t % 4) + v % 2;
    if (col < n) out[row * ld + col] = d[v];
  }}"""
HELPERS = """#pragma unroll
  for (int v = 0; v < {values}; ++v) {{
    int row = acc_row(t, v), col = acc_col(t, v);
    if (col < n) out[row * ld + col] = d[v];
  }}"""
FOR_EACH = "  acc_for_each(t, [&](int v, int row, int col) {{ if (col < n) out[row * ld + col] = d[v]; }});"


@pytest.mark.parametrize("n", [64, 256])
def test_the_helpers_cost_what_the_hand_formula_costs(n):
    coords = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 64, n))
    values = coords.values
    source = coords.cuda("acc") + "".join(
        STORE.format(entry=e, values=values, body=b.format(values=values))
        for e, b in (("hand", HAND), ("helpers", HELPERS), ("for_each", FOR_EACH)))
    sass = function_instructions(compile_cuda(source, arch="sm_90a").sass())
    hand = opcode_histogram(sass["hand"])
    assert opcode_histogram(sass["helpers"]) == hand and opcode_histogram(sass["for_each"]) == hand
    assert not any(op.startswith(("LDL", "STL")) for op in hand)


def test_the_helpers_text():
    text = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 64, 32)).cuda("acc")
    assert "__device__ __forceinline__ int acc_row_thread(unsigned t) { return int(((t % 32u) / 4u) + (t / 32u) * 16u); }" in text
    assert "__host__ __device__ constexpr int acc_col_value(int v) { return int((unsigned(v) % 2u) + (unsigned(v) / 4u) * 8u); }" in text
    assert "constexpr int acc_row_slots = 2;" in text and "constexpr int acc_values = 16;" in text


def test_slots_and_offsets_are_constant_expressions():
    coords = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 64, 32))
    checks = "".join(f"static_assert(acc_row_slot({v}) == {s}, \"slot\");\n"
                     for s, vs in enumerate(coords.slots("row")) for v in vs)
    checks += "".join(f"static_assert(acc_col_value({v}) == {int(coords.value_col[v])}, \"col\");\n"
                      for v in range(coords.values))
    compile_cuda(coords.cuda("acc") + checks + 'extern "C" __global__ void k() {}', arch="sm_90a")


def test_a_table_without_a_layout_has_no_helpers():
    c = pc.fragment_coords(pc.make_fragment(pc.f32, 32, pc.Layout((32, 2), (3, 1)), shape=(16, 8)))
    with pytest.raises(CompileError, match=r"is not a layout; the device helpers need one"):
        c.cuda("odd")


def test_the_name_is_a_c_identifier():
    with pytest.raises(CompileError, match=r"'int' is not a C identifier"):
        pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 64, 32)).cuda("int")
