"""pycute/sm100.cuh: generated from arch, found with no flags, one source for the real and the soft build."""
import re

import pytest

import pycute as pc
from pycute.atoms import TmemLoadAtom, TmemStoreAtom
from pycute.codegen import include_dir
from pycute.codegen.header import header_path, ldst_helper, sm100_header
from pycute.compile import compile_cuda

USER = """#include "pycute/sm100.cuh"
extern "C" __global__ void k(unsigned* out) {
  __shared__ unsigned slot;
  __shared__ __align__(8) unsigned long long mbar;
  if (pycute_warp_index() == 0) { pycute_tmem_alloc<1>(pycute_smem_address(&slot), 32); pycute_tmem_relinquish_alloc_permit<1>(); }
  if (threadIdx.x == 0) pycute_mbarrier_init(pycute_smem_address(&mbar), 1);
  pycute_tcgen05_fence_before_thread_sync(); __syncthreads(); pycute_tcgen05_fence_after_thread_sync();
  unsigned v[4];
  pycute_tcgen05_ld_32x32b_x4(slot + ((32u * (pycute_warp_index() % 4u)) << 16), v);
  pycute_tcgen05_wait_ld();
  out[threadIdx.x] = v[0] + v[3];
  __syncthreads();
  if (pycute_warp_index() == 0) pycute_tmem_dealloc<1>(slot, 32);
}
"""


def test_the_shipped_header_is_the_rendering_of_the_facts():
    assert header_path().read_text(encoding="utf-8") == sm100_header(), \
        "pycute/include/pycute/sm100.cuh is stale: run python -m pycute header --write"


def test_include_dir_holds_the_header_and_the_cli_prints_it(capsys):
    from pycute.cli import main
    assert (include_dir() / "pycute" / "sm100.cuh").is_file()
    assert main(["include-dir"]) == 0 and capsys.readouterr().out.strip() == str(include_dir())


def test_compile_cuda_finds_the_header_with_no_flags_and_the_real_build_is_tcgen05():
    h = compile_cuda(USER).histogram()
    assert h["LDTM.x4"] == 1 and h["UTCATOMSWS.FIND_AND_SET.ALIGN"] >= 1 and h["UTCATOMSWS.AND"] == 1


def test_the_soft_build_of_the_same_source_has_no_tcgen05():
    compiled = compile_cuda(USER, arch="sm_90a", options=("-DPYCUTE_SOFT_TCGEN05",))
    assert not re.search(r"^\s*tcgen05\.", compiled.ptx, re.M)     # no tcgen05 instruction and not any(op.startswith(("LDTM", "UTC")) for op in compiled.histogram())


def test_the_real_build_refuses_sm_90a():
    with pytest.raises(pc.CompileError, match="tcgen05"):
        compile_cuda(USER, arch="sm_90a")


@pytest.mark.parametrize("num", [1, 2, 4, 8, 16, 32])
def test_each_32x32b_helper_assembles_to_its_sass(num):
    src = f"""#include "pycute/sm100.cuh"
extern "C" __global__ void k(unsigned taddr, unsigned* out) {{
  unsigned v[{num}];
  {ldst_helper("ld", num)}(taddr, v);
  pycute_tcgen05_wait_ld();
  {ldst_helper("st", num)}(taddr + 64u, v);
  pycute_tcgen05_wait_st();
  out[threadIdx.x] = v[{num - 1}];
}}
"""
    h = compile_cuda(src).histogram()
    assert h[TmemLoadAtom("32x32b", num).sass] == 1 and h[TmemStoreAtom("32x32b", num).sass] == 1


def test_user_include_directories_and_options_are_passed(tmp_path):
    (tmp_path / "mine.cuh").write_text("#define MINE 7\n")
    src = '#include "mine.cuh"\nextern "C" __global__ void k(int* o) { o[0] = MINE + EXTRA; }\n'
    compile_cuda(src, include_dirs=[tmp_path], options=("-DEXTRA=1",))
    with pytest.raises(pc.CompileError, match="does not exist"):
        compile_cuda(src, include_dirs=[tmp_path / "missing"])
    with pytest.raises(TypeError, match="include_dirs must be a sequence"):
        compile_cuda(src, include_dirs=str(tmp_path))


def test_a_changed_user_header_is_recompiled_not_served_from_the_cache(tmp_path):
    (tmp_path / "mine.cuh").write_text("#define MINE 7\n")
    src = '#include "mine.cuh"\nextern "C" __global__ void k(int* o) { o[0] = MINE; }\n'
    first = compile_cuda(src, include_dirs=[tmp_path], cache=pc.compile.CompileCache(tmp_path / "c"))
    (tmp_path / "mine.cuh").write_text("#define MINE 8\n")
    again = compile_cuda(src, include_dirs=[tmp_path], cache=pc.compile.CompileCache(tmp_path / "c"))
    assert not again.from_cache and again.cubin != first.cubin


def test_compiled_code_becomes_a_cuda_core_object_code_without_a_driver():
    from cuda.core import ObjectCode
    code = compile_cuda(USER).object_code()
    assert isinstance(code, ObjectCode) and code.code_type == "cubin"
