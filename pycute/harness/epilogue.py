"""The epilogue round trip on a GPU: one CTA of the fragment's threads takes a fragment from global memory into
registers, runs an epilogue plan's generated code (registers -> (convert) -> the swizzled shared tile -> proxy
fence -> barrier -> TMA store of the tile into a global array), dumps the shared tile, and loads it back into
registers with a shared -> register plan (ldmatrix / ld.shared) of the same layout; the emulator runs the same
plans on the same bytes, and the shared image, the array and the loaded registers must agree bit for bit.

``ConversionProbe`` runs each packing conversion on a list of f32 bit patterns (every special value, ties,
subnormals, random bits) and compares with ``sim.convert``'s models."""
from __future__ import annotations

import attrs
import numpy as np

from ..arch.sm80.cvt import PACK_CONVERSIONS, pack_conversion
from ..codegen.smem_ldst import cvt_helper
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.smem_ldst.epilogue import EpiloguePlan
from ..copy.smem_ldst.plan import SmemCopyPlan
from ..errors import CompileError
from ..sim.convert import pack_pair
from ..sim.emulator import Sm90Emulator
from ..sim.verify_smem import SPECIAL_F32, fragment_bits, run_epilogue, run_smem_copy
from ..tensor.values import smem_bytes_needed
from .common import BUFFER_AND_BARRIER

__all__ = ["EpilogueRoundTrip", "ConversionProbe", "registers_of"]

_MARKER = 0xA5


def registers_of(bits: np.ndarray, element_bits: int) -> np.ndarray:
    """``(threads, values)`` element bits as the ``(threads, registers)`` 32-bit words that hold them (value
    ``v`` at bit ``v * bits % 32`` of register ``v * bits // 32``)."""
    per = 32 // element_bits
    parts = bits.astype(np.uint64).reshape(bits.shape[0], -1, per)
    shifts = (np.arange(per, dtype=np.uint64) * np.uint64(element_bits))[None, None, :]
    return (parts << shifts).sum(axis=2).astype(np.uint32)


@attrs.frozen
class EpilogueRoundTrip:
    """Store a fragment with ``epilogue`` (into its array at ``origin``) and load it back with ``load``."""

    epilogue: EpiloguePlan
    load: SmemCopyPlan
    origin: tuple[int, ...]

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.epilogue, EpiloguePlan) or not isinstance(self.load, SmemCopyPlan):
            raise TypeError("EpilogueRoundTrip: an EpiloguePlan (make_epilogue) and a load SmemCopyPlan")
        if self.load.op != "ld" or self.load.smem != self.epilogue.store.smem or \
                self.load.threads != self.epilogue.threads:
            raise CompileError("EpilogueRoundTrip: the load reads the epilogue's tile with the same threads")

    @property
    def smem_bytes(self) -> int:
        return smem_bytes_needed(self.epilogue.store.smem)

    def _words(self, plan: SmemCopyPlan) -> int:
        return plan.values * plan.fragment.dtype.bits // 32

    def source(self) -> str:
        ep, ld = self.epilogue, self.load
        modes = len(ep.tile_shape)
        kind = "float" if ep.store.fragment.dtype.name == "f32" else "unsigned"
        cast = "__uint_as_float" if kind == "float" else ""
        lkind = "float" if ld.fragment.dtype.name == "f32" else "unsigned"
        lcast = "__float_as_uint" if lkind == "float" else ""
        n, m, t = self._words(ep.store), self._words(ld), ep.threads
        return (ep.cuda("rt") + ld.cuda("rt_load") + f"""
extern "C" __global__ void epilogue_roundtrip(const unsigned* in, const pycute_tensor_map* map, unsigned char* dump,
                                              unsigned* loaded, {", ".join(f"int c{k}" for k in range(modes))}) {{
{BUFFER_AND_BARRIER}
  (void)m;
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) buf[i] = {_MARKER};
  if (threadIdx.x == 0) pycute_tensormap_acquire(map);
  __syncthreads();
  {kind} frag[{n}];
  for (unsigned i = 0; i < {n}u; ++i) frag[i] = {cast}(in[i * {t}u + threadIdx.x]);
  rt(map, base, threadIdx.x, frag, {", ".join(f"c{k}" for k in range(modes))});
  rt_wait(threadIdx.x);
  if (threadIdx.x == 0) pycute_bulk_wait_group<0>();
  for (unsigned i = threadIdx.x; i < {self.smem_bytes}u; i += blockDim.x) dump[i] = buf[i];
  {lkind} back[{m}];
  rt_load(base, threadIdx.x, back);
  for (unsigned i = 0; i < {m}u; ++i) loaded[i * {t}u + threadIdx.x] = {lcast}(back[i]);
}}
""")

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def fragment(self, seed: int = 0) -> np.ndarray:
        """``(threads, values)`` element bits of the stored fragment (with a conversion: the special values too)."""
        return fragment_bits(self.epilogue.store, seed)

    def array(self, seed: int = 0) -> np.ndarray:
        return np.random.default_rng(seed + 1).integers(0, 256, self.epilogue.tma.array_bytes, dtype=np.uint8)

    def emulate(self, seed: int = 0) -> dict:
        """The shared image, the array and the loaded registers (threads x words) the emulator says."""
        frag, gmem = self.fragment(seed), self.array(seed)
        emu = Sm90Emulator(smem_bytes=self.smem_bytes)
        emu.write_smem(0, np.full(self.smem_bytes, _MARKER, dtype=np.uint8))
        run_epilogue(emu, self.epilogue, frag, gmem, self.origin)
        loaded = run_smem_copy(emu, self.load)
        assert loaded is not None
        return {"smem": emu.ctas[0].smem.copy(), "array": gmem,
                "loaded": registers_of(loaded, self.load.fragment.dtype.bits)}

    def run(self, gpu: Gpu, seed: int = 0, arch: str = "sm_90a") -> dict:
        """Run on ``gpu``; ``{"smem": (got, want), "array": (got, want), "loaded": (got, want)}``."""
        gpu = check_gpu(gpu)
        ep = self.epilogue
        words = registers_of(self.fragment(seed), ep.store.fragment.dtype.bits)
        d_in = gpu.upload(np.ascontiguousarray(words.T))
        d_out = gpu.upload(self.array(seed))
        d_map = gpu.upload(np.frombuffer(tensor_map_bytes(ep.tma.tensor_map.encode(int(d_out.handle))),
                                         dtype=np.uint8))
        d_dump = gpu.upload(np.zeros(self.smem_bytes, dtype=np.uint8))
        m = self._words(self.load)
        d_loaded = gpu.upload(np.zeros(m * ep.threads, dtype=np.uint32))
        kernel = gpu.kernel(self.compile(arch), "epilogue_roundtrip")
        gpu.launch(kernel, d_in, d_map, d_dump, d_loaded, *(np.int32(c) for c in self.origin), grid=1,
                   block=ep.threads, dynamic_smem=self.smem_bytes + 1024)
        want = self.emulate(seed)
        got_loaded = gpu.download(d_loaded, np.uint32, m * ep.threads).reshape(m, ep.threads).T
        return {"smem": (gpu.download(d_dump, np.uint8, self.smem_bytes), want["smem"]),
                "array": (gpu.download(d_out, np.uint8, ep.tma.array_bytes), want["array"]),
                "loaded": (np.ascontiguousarray(got_loaded), want["loaded"])}


@attrs.frozen
class ConversionProbe:
    """Every packing conversion (``arch.sm80.cvt``) of ``count`` f32 pairs on the GPU against the models."""

    count: int = 1 << 20

    def inputs(self, seed: int = 0) -> np.ndarray:
        """``(2, count)`` f32 bit patterns: each special value against every special value, then random bits and
        random values near each format's range."""
        rng = np.random.default_rng(seed)
        a, b = np.meshgrid(SPECIAL_F32, SPECIAL_F32)
        rand = rng.integers(0, 1 << 32, (2, self.count), dtype=np.uint64).astype(np.uint32)
        near = (rng.standard_normal((2, self.count)) * 2.0 ** rng.integers(-24, 20, (2, self.count)))
        pairs = np.concatenate([np.stack([a.ravel(), b.ravel()]), rand, near.astype(np.float32).view(np.uint32)],
                               axis=1)
        return np.ascontiguousarray(pairs)

    def forms(self) -> list:
        return [pack_conversion(d, s) for d, (_, _, mandatory, _) in PACK_CONVERSIONS.items()
                for s in ((True,) if mandatory else (False, True))]

    def source(self) -> str:
        calls = "\n".join(f"    out[{k}u * n + i] = {cvt_helper(c.dst, c.satfinite)}(__uint_as_float(a[i]), "
                          f"__uint_as_float(b[i]));" for k, c in enumerate(self.forms()))
        return f"""#include "pycute/smem_ldst.cuh"
extern "C" __global__ void convert_probe(const unsigned* a, const unsigned* b, unsigned* out, unsigned n) {{
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
{calls}
  }}
}}
"""

    def run(self, gpu: Gpu, seed: int = 0, arch: str = "sm_90a") -> list[dict]:
        """Per form: its PTX, how many results differ from the model, and the first few differences."""
        gpu = check_gpu(gpu)
        pairs = self.inputs(seed)
        n = pairs.shape[1]
        forms = self.forms()
        d_a, d_b = gpu.upload(pairs[0]), gpu.upload(pairs[1])
        d_out = gpu.upload(np.zeros(len(forms) * n, dtype=np.uint32))
        kernel = gpu.kernel(compile_cuda(self.source(), arch=arch), "convert_probe")
        gpu.launch(kernel, d_a, d_b, d_out, np.uint32(n), grid=264, block=256)
        got = gpu.download(d_out, np.uint32, len(forms) * n).reshape(len(forms), n)
        out = []
        for k, c in enumerate(forms):
            want = pack_pair(pairs[0], pairs[1], c.dst, c.satfinite).astype(np.uint32)
            bad = np.flatnonzero(got[k] != want)
            out.append({"ptx": c.ptx, "values": int(n), "differ": int(bad.size),
                        "examples": [{"a": f"{int(pairs[0, i]):#010x}", "b": f"{int(pairs[1, i]):#010x}",
                                      "gpu": f"{int(got[k, i]):#x}", "model": f"{int(want[i]):#x}"}
                                     for i in bad[:6]]})
        return out
