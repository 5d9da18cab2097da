"""The attention kernel as compiled: its body's hand-written lines (at most 60, none an address, a count, a parity,
a register index or a lane mask), and per configuration its sm_90a SASS -- one HGMMA per k-step of S = Q K^T and of
O += P V at each of their two issue sites, the TMA loads and the one TMA store planned, no local memory, and no
wgmma serialised by ptxas."""
import re

import pytest

from pycute.kernels.attention.config import AttentionConfig
from pycute.kernels.attention.kernel import BODY, HANDWRITTEN_LINES, body_lines

# the first guess at head dim 64, causal (three consumer warpgroups taking turns; the speed tool's dry run builds it
# too), and the packed-sequence kernel the CPU runs (its maps retargeted on the device); the speed tool's dry run
# builds and checks every configuration it times (python -m tools attention_speed --dry)
CONFIGS = [AttentionConfig.choose(64, causal=True),
           AttentionConfig(head_dim=64, block_n=64, consumers=1, causal=True, varlen=True)]


def test_the_body_has_at_most_60_hand_written_lines():
    assert body_lines() == HANDWRITTEN_LINES <= 60


def test_no_line_of_the_body_is_an_address_a_count_a_parity_a_register_index_or_a_lane_mask():
    body = BODY.read_text()
    body = body[body.index('extern "C"'):]
    code = "\n".join(line.split("//")[0] for line in body.splitlines())
    assert set(re.findall(r"(?<![\w.])(\d+)u?\b", code)) <= {"0", "1", "2"}     # loop bounds and scale_d only
    for pattern in (r"0x", r"<<", r">>", r"%", r"\.phase", r"parity", r"\[\s*\d", r"&\s*\d", r"\bsmem\s*\+"):
        assert not re.search(pattern, code), pattern


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: c.name)
def compiled(request):
    return request.param, request.param.compile()


def test_one_hgmma_per_k_step_at_each_issue_site_and_no_serialised_wgmma(compiled):
    c, k = compiled
    h = k.histogram()
    hgmma = {op.split(".")[1]: n for op, n in h.items() if op.startswith("HGMMA")}
    # S = Q K^T (N = block_n): head_dim / 16 k-steps, issued before the loop and in it; O += P V (N = head_dim):
    # block_n / 16, in it and after
    want: dict = {}
    for shape, n in ((f"64x{c.block_n}x16", 2 * c.head_dim // 16), (f"64x{c.head_dim}x16", 2 * c.block_n // 16)):
        want[shape] = want.get(shape, 0) + n
    assert hgmma == want
    assert not any("C7515" in line or "C7512" in line for line in k.log.splitlines())


def test_the_planned_tma_loads_and_store_and_no_local_memory(compiled):
    c, k = compiled
    h = k.histogram()
    count = lambda prefix: sum(n for op, n in h.items() if op.startswith(prefix))         # noqa: E731
    assert count("UTMALDG") == 4 and count("UTMASTG") == 1         # K twice, Q, V; O (4-D, or 5-D over 64-column atoms)
    assert count("UTMACCTL") == (4 if c.varlen else 0)             # the four maps retargeted at a tile's sequence
    assert h["STSM.16.M88.4"] == c.head_dim // 16                  # a warpgroup's 64 x head_dim O, 16 B a thread each
    assert not any(op.startswith(("LDL", "STL")) for op in h)
