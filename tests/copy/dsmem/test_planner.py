"""make_dsmem_copy: chunks that follow both sides' swizzled bytes, 16-byte rules checked per chunk, the peer
addresses from mapa, the refusal of a copy to the sending CTA itself; every case emulated, the generated code
interpreted."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile.nvrtc import compile_cuda
from pycute.copy.dsmem import make_dsmem_copy
from pycute.errors import EmulationError
from pycute.sim.emulator import Sm90Emulator
from pycute.interp.stream import trace_entry

from tests.copy.flat_cases import DSMEM


@pytest.mark.parametrize("name, src, dst, clusters", DSMEM, ids=[c[0] for c in DSMEM])
def test_every_case_moves_what_the_layouts_say(name, src, dst, clusters):
    pc.verify(make_dsmem_copy(dst, src))


def test_same_swizzle_on_both_sides_is_one_chunk_and_different_ones_follow_the_bytes():
    a = pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B")
    plain = pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1)))
    assert len(make_dsmem_copy(a, a).instructions) == 1
    mixed = make_dsmem_copy(plain, a)
    assert all(c.size % 16 == 0 and c.src % 16 == 0 and c.dst % 16 == 0 for c in mixed.instructions)
    assert mixed.expect_tx == 8192 and len(mixed.instructions) > 8


def test_a_transposing_copy_has_no_16_byte_runs():
    src = pc.make_smem_tensor(pc.f32, Layout((16, 16), (16, 1)))
    with pytest.raises(pc.PlanError, match=r"run of 4 B from shared \+0 to the peer's shared \+0 is not a 16-byte"):
        make_dsmem_copy(pc.make_smem_tensor(pc.f32, Layout((16, 16), (1, 16))), src)


def test_a_copy_to_the_sending_cta_is_refused():
    plan = make_dsmem_copy(*(pc.make_smem_tensor(pc.f32, Layout((16, 16), (16, 1))),) * 2)
    with pytest.raises(pc.PlanError, match="copies to itself"):
        plan.stream(0, 0x1000, peer=1, cta=1)
    emu = Sm90Emulator(smem_bytes=8192, ctas=2)
    issue = plan.stream(0, 4096, peer=1, cta=0)[0]._replace(peer=0)
    with pytest.raises(EmulationError, match="strictly remote"):
        emu.dsmem_copy(issue, cta=0)


def test_the_generated_code_maps_the_peer_and_issues_the_chunks():
    plan = make_dsmem_copy(pc.make_smem_tensor(pc.f32, Layout((32, 16), (16, 1))),
                           pc.kmajor_smem_tensor(pc.f32, 32, 16, "64B"))
    source = plan.cuda("copy") + ('extern "C" __global__ void probe(unsigned dst, unsigned src, unsigned mbar, '
                                  'unsigned peer) { if (threadIdx.x == 0) copy(dst, src, mbar, peer); }')
    code = compile_cuda(source, arch="sm_90a")
    got = trace_entry(code.ptx, {0: 0x2000, 1: 0x400, 2: 0x8, 3: 3}, {}, "probe").bulk
    assert [(i.dst, i.src, i.size, i.peer) for i in got] == \
        [(i.dst, i.src, i.size, i.peer) for i in plan.stream(0x2000, 0x400, peer=3)]
    assert sum("UBLKCP.S.S" in i for i in code.instructions()) == len(plan.instructions)


def test_runs_starting_inside_a_16_byte_unit_are_refused_where_tvm_emits_them():
    """TVM 0.27's dsmem emits 64 copies of 16 B starting 8 bytes into each row here (perf/tvm_dsmem_chunks.py)."""
    buf = pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1)))
    with pytest.raises(pc.PlanError, match=r"run of 16 B from shared \+8 to the peer's shared \+8"):
        make_dsmem_copy(buf[0:64, 4:12], buf[0:64, 4:12])
    assert len(make_dsmem_copy(buf[0:64, 8:16], buf[0:64, 8:16]).instructions) == 64
