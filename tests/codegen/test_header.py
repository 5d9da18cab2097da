"""pycute/sm100.cuh: generated from arch, found with no flags, one source for the real and the soft build."""
import re

import pytest

import pycute as pc
from pycute.atoms import TmemLoadAtom, TmemStoreAtom
from pycute.codegen import include_dir
from pycute.codegen.header import PARTS, header_path, headers, sm100_header
from pycute.codegen.tcgen05_ldst import ldst_helper
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


@pytest.mark.parametrize("name", list(headers()))
def test_each_shipped_header_is_the_rendering_of_the_facts(name):
    assert (include_dir() / name).read_text(encoding="utf-8") == headers()[name], \
        f"pycute/include/{name} is stale: run python -m pycute header --write"


def test_sm100_cuh_includes_every_part_in_order():
    includes = re.findall(r'^#include "(pycute/\w+\.cuh)"', sm100_header(), re.M)
    assert includes == [name for name, _, _ in PARTS] and "#define PYCUTE_SM100_ABI PYCUTE_ABI" in sm100_header()
    assert sorted(p.name for p in (include_dir() / "pycute").iterdir()) == sorted(n.split("/")[1] for n in headers())


HOPPER = """#include "pycute/common.cuh"
extern "C" __global__ void k(unsigned* out) {
  __shared__ __align__(8) unsigned long long mbar;
  if (pycute_elect_one_sync()) pycute_mbarrier_init(pycute_smem_address(&mbar), 1);
  pycute_cluster_sync();
  if (threadIdx.x == 0) pycute_mbarrier_arrive(pycute_smem_address(&mbar));
  pycute_mbarrier_wait_parity(pycute_smem_address(&mbar), 0);
  out[threadIdx.x] = pycute_warp_index() + pycute_cluster_ctarank();
}
"""


def test_the_common_part_builds_for_sm_90a_alone_and_holds_no_tcgen05():
    code = re.sub(r"//[^\n]*", "", headers()["pycute/common.cuh"])
    assert "tcgen05" not in code and "TMEM" not in code
    compiled = compile_cuda(HOPPER, arch="sm_90a")
    assert not re.search(r"^\s*tcgen05\.", compiled.ptx, re.M) and "mbarrier.try_wait" in compiled.ptx


@pytest.mark.parametrize("part", ["pycute/tcgen05.cuh", "pycute/tcgen05_ldst.cuh"])
def test_each_tcgen05_part_builds_alone_in_both_builds(part):
    src = f'#include "{part}"\nextern "C" __global__ void k() {{ pycute_tcgen05_fence_after_thread_sync(); }}\n'
    assert compile_cuda(src).cubin and compile_cuda(src, arch="sm_90a", options=("-DPYCUTE_SOFT_TCGEN05",)).cubin


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
