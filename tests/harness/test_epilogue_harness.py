"""The epilogue's GPU harnesses, checked on the CPU: the round-trip kernel compiles to the planned stores, loads and
TMA store, and its emulated result is what the layouts alone say; the conversion probe covers every form; the
stream kernel issues one TMA store site and the planned stores per tile, and its check accepts exactly what the
plans write tile by tile (an emulated small array) and nothing else. The GPU runs are tests/gpu/test_gpu_epilogue.py
and python -m tools epilogue."""
import collections

import numpy as np
import pytest

import pycute as pc
from pycute import Layout
from pycute.copy.smem_ldst import make_epilogue
from pycute.harness.epilogue import ConversionProbe, registers_of
from pycute.harness.stream_epilogue import EpilogueStream, stream_value
from pycute.sim.emulator import Sm90Emulator
from pycute.sim.verify_smem import expected_array, expected_tile, run_epilogue

from tests.gpu.epilogue_probe import bank_source, roundtrip
from tests.copy.smem_ldst.cases import wgmma_layout

CASES = ["wgmma-bf16-row-128B", "tmem32-e4m3-row-32B", "user-f32-col-128B"]


@pytest.mark.parametrize("name", CASES)
def test_the_round_trip_kernel_holds_the_planned_instructions(name):
    rt = roundtrip(name)
    ops = collections.Counter(i.split()[0] for i in rt.compile().instructions())
    planned = collections.Counter(m.atom.sass for m in rt.epilogue.store.moves + rt.load.moves)
    assert all(ops[op] >= n for op, n in planned.items())
    assert sum(n for op, n in ops.items() if op.startswith("UTMASTG")) == len(rt.epilogue.tma.instructions)


@pytest.mark.parametrize("name", CASES)
def test_the_round_trips_emulated_result_is_what_the_layouts_say(name):
    rt = roundtrip(name)
    got = rt.emulate(seed=2)
    frag = rt.fragment(2)
    marker = np.full(rt.smem_bytes, 0xA5, dtype=np.uint8)
    assert np.array_equal(got["smem"], expected_tile(rt.epilogue.store, frag, marker))
    assert np.array_equal(got["array"], expected_array(rt.epilogue, frag, rt.array(2), rt.origin))
    assert got["loaded"].shape == (rt.load.threads, rt.load.values * rt.load.fragment.dtype.bits // 32)


def test_registers_hold_values_from_the_low_bits():
    assert registers_of(np.array([[0x11, 0x22, 0x33, 0x44]], dtype=np.uint32), 8).tolist() == [[0x44332211]]


def test_the_conversion_probe_covers_every_form_and_the_special_pairs():
    probe = ConversionProbe(count=64)
    assert [c.ptx for c in probe.forms()] == ["cvt.rn.bf16x2.f32", "cvt.rn.satfinite.bf16x2.f32",
                                              "cvt.rn.f16x2.f32", "cvt.rn.satfinite.f16x2.f32",
                                              "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32"]
    pairs = probe.inputs()
    assert pairs.shape[0] == 2 and {0x7FC00000, 0xFF800000} <= set(pairs[0].tolist())
    ops = collections.Counter(i.split()[0] for i in pc.compile.compile_cuda(probe.source(), arch="sm_90a")
                              .instructions())
    assert sum(n for op, n in ops.items() if op.startswith("F2FP")) >= len(probe.forms())


def test_the_bank_kernels_compile_one_per_plan():
    specs = [f"{op}:{name}" for name in CASES for op in ("st", "ld")]
    code = pc.compile.compile_cuda(bank_source(specs), arch="sm_90a")
    assert all(f".entry bank_{k}(" in code.ptx for k in range(len(specs)))


def _small_stream(rows=64, cols=128, tiles=(2, 32)):
    array = pc.make_global_tensor(pc.bf16, Layout((rows * tiles[0], cols * tiles[1]), (cols * tiles[1], 1)))
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, rows, cols, "128B"), 2)[:, :, pc.dynamic("stage")]
    return EpilogueStream(make_epilogue(pc.make_fragment(pc.f32, 128, wgmma_layout(cols)), ring, array))


def test_the_stream_kernel_stores_each_tile_with_the_planned_instructions_and_one_tma_store():
    stream = _small_stream()
    ops = collections.Counter(i.split()[0] for i in stream.compile().instructions())
    assert ops["STSM.16.M88.4"] == len(stream.plan.store.moves) and ops["UTMASTG.3D"] == 1


def test_the_stream_check_accepts_what_the_plans_write_and_nothing_else():
    stream = _small_stream()
    ep, (t0, t1) = stream.plan, stream.tiles
    gmem = np.zeros(ep.tma.array_bytes, dtype=np.uint8)
    rows, cols = ep.tile_shape
    for g in range(t0 * t1):
        frag = stream_value(np.arange(128)[:, None], np.arange(ep.store.values)[None, :], np.full(1, g),
                            ep.store.values).view(np.uint32)
        run_epilogue(Sm90Emulator(smem_bytes=stream.smem_bytes), ep, frag, gmem, ((g // t1) * rows,
                                                                                     (g % t1) * cols), stage=g % 2)
    assert stream.check(gmem)
    gmem[12345] ^= 0x40
    assert not stream.check(gmem)
