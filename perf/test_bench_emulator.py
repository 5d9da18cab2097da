"""Emulator throughput: a full 128-lane x 512-column TMEM fill (64 x 128x256b copies, 256 KiB) per round."""
from pycute.arch.sm100 import SmemDescriptor, SwizzleMode
from pycute.sim import Sm100Emulator


def test_full_tmem_fill(benchmark):
    emu = Sm100Emulator(smem_bytes=64 * 1024)
    base = emu.alloc(512)
    desc = SmemDescriptor(lbo=16, sbo=1024, swizzle=SwizzleMode.B128)
    # 64 copies of 4 KiB: 16 K-steps of 32 B inside each 128 B swizzle row, 4 groups of 16 KiB.
    stream = [("tcgen05.cp.cta_group::1.128x256b", base + 8 * i, desc.encode(16384 * (i // 16) % 65536 + 32 * (i % 4)))
              for i in range(64)]
    benchmark.group = "emulator"
    benchmark.extra_info["bytes"] = 64 * 4096
    benchmark(emu.run, stream)
    if benchmark.stats is not None:          # None under --benchmark-disable
        benchmark.extra_info["MB/s"] = round(64 * 4096 / benchmark.stats.stats.median / 1e6, 1)
