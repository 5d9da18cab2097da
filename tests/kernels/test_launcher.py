"""The kernels' protocol and launcher, checked without a GPU: a configuration's constants become a prologue of
constexprs; the launcher reads the entry's parameter block from the PTX (tensor maps by value at 64-byte
alignment, scalars at theirs); a tensor map from a tensor's shape and strides is the planner's own map of that array
(so the per-call shortcut never drifts from the plans); TMA's rules on a tensor are refused naming the rule; without
torch, a GPU or a driver the package still imports and a launch raises LaunchError saying what is missing."""
import subprocess
import sys
from pathlib import Path

import pytest

import pycute as pc
from pycute.compile import compile_cuda, runtime
from pycute.kernels import handwritten_lines, make_launch_shape, prologue
from pycute.kernels.hopper_gemm import DTYPES, GemmPlans, HopperGemm, candidates
from pycute.kernels.launcher import Launcher, param_layout
from pycute.kernels.tensor_maps import TensorMapSpec

ROOT = Path(__file__).resolve().parents[2]


def test_the_prologue_spells_each_constant_in_its_c_type():
    text = prologue({"COOPERATIVE": True, "BM": 128, "LOW": -3, "ALPHA": 0.5}, "cfg")
    assert text.splitlines() == ["// cfg: its compile-time constants", "constexpr bool COOPERATIVE = true;",
                                 "constexpr unsigned BM = 128u;", "constexpr int LOW = -3;",
                                 "constexpr float ALPHA = 0.5f;"]


def test_a_constant_must_be_a_c_identifier_of_a_number():
    with pytest.raises(pc.PlanError, match=r"'2BM' is not a C identifier"):
        prologue({"2BM": 1}, "cfg")
    with pytest.raises(TypeError, match=r"BM is a bool, an int or a float, got str"):
        prologue({"BM": "128"}, "cfg")


def test_hand_written_lines_are_the_kernels_body_without_blanks_comments_or_lone_braces():
    text = 'extern "C" __global__ void k(int n) {\n  // why\n\n  if (n) {\n    n++;\n  }\n}\n'
    assert handwritten_lines(text, "k") == 2
    with pytest.raises(pc.PlanError, match=r"no extern \"C\" __global__ kernel 'gemm'"):
        handwritten_lines(text, "gemm")


@pytest.mark.parametrize("cluster, error", [((2, 2, 2, 2), r"up to 3 positive extents"),
                                            ((8, 4), r"is 32 CTAs; at most 16")])
def test_a_launch_shape_refuses_a_cluster_the_hardware_has_not(cluster, error):
    with pytest.raises(pc.PlanError, match=error):
        make_launch_shape("k", 128, 0, cluster)


def test_a_launch_shape_is_whole_warps():
    with pytest.raises(pc.PlanError, match=r"100 threads; a CTA is 1 to 32 whole warps"):
        make_launch_shape("k", 100, 0)


def test_the_gemms_parameter_block_is_three_maps_at_64_bytes_then_the_scalars_pointers_and_the_epilogues_struct():
    layout = param_layout(HopperGemm(BN=64, consumers=1, stages=5, cluster=1).compile().ptx, "gemm")
    # the maps; M, N, K, scale; the split-K workspace and counters, the partition (dp, workers); the fp8 scales
    assert [(o, c) for _, o, _, c in layout.params] == [(0, "128s"), (128, "128s"), (256, "128s"), (384, "I"),
                                                         (388, "I"), (392, "I"), (396, "f"), (400, "Q"), (408, "Q"),
                                                         (416, "I"), (420, "I"), (424, "Q"), (432, "Q"), (440, "1s")]
    assert layout.size == 441 and layout.packer.format == "<128s128s128sIIIfQQIIQQ1s"     # the empty epilogue_params


def test_scalars_and_pointers_sit_at_their_own_alignment():
    source = 'extern "C" __global__ void k(unsigned char c, const float* p, int n, double x) {}'
    layout = param_layout(compile_cuda(source, arch="sm_90a").ptx, "k")
    assert [(o, c) for _, o, _, c in layout.params] == [(0, "B"), (8, "Q"), (16, "I"), (24, "d")]


def test_an_entry_the_ptx_has_not_is_refused():
    with pytest.raises(pc.LaunchError, match=r"no entry 'other'"):
        param_layout(HopperGemm().compile().ptx, "other")


@pytest.mark.parametrize("mnk", [(8192, 8192, 8192), (1000, 1304, 528), (64, 8, 16), (777, 4104, 2056)])
@pytest.mark.parametrize("g", candidates()[::2] + candidates("e4m3")[:1], ids=repr)
def test_a_map_from_a_tensors_shape_and_strides_is_the_planners_map_of_that_array(g, mnk):
    M, N, K = mnk
    unit = 128 // DTYPES[g.dtype].bits                          # elements per 16 bytes
    lda = ldb = -(-K // unit) * unit
    ldd = -(-N // 8) * 8
    planned = GemmPlans.of(g, M, N, K, lda, ldb, ldd).maps()
    specs = [TensorMapSpec.of(m) for m in g.plans.maps()]
    got = [s.params_for(shape, (ld, 1)) for s, shape, ld in zip(specs, [(M, K), (N, K), (M, N)], (lda, ldb, ldd))]
    assert got == list(planned)


@pytest.mark.parametrize("shape, strides, address, error", [
    ((64, 64), (64, 2), 0, r"innermost stride is 2; TMA reads rows of consecutive elements"),
    ((64, 60), (60, 1), 0, r"stride 0 is 60 elements = 120 B; TMA needs a positive multiple of 16 B"),
    ((64, 64), (64, 1), 8, r"the address 0x8 is not 16-byte aligned"),
    ((64,), (1,), 0, r"1 dimensions \(64,\); the kernel's map has 2"),
    ((0, 64), (64, 1), 0, r"dimension 0 is 0; a tensor map's dimensions are 1 to")])
def test_a_tensor_tma_cannot_read_is_refused_naming_the_rule(shape, strides, address, error):
    spec = TensorMapSpec.of(HopperGemm().plans.maps()[0])
    with pytest.raises(pc.LaunchError, match=error):
        spec.check(shape, strides, address, "gemm: a")


@pytest.mark.skipif(runtime.driver_available(), reason="a CUDA driver is present")
def test_encoding_without_a_driver_says_so():
    spec = TensorMapSpec.of(HopperGemm().plans.maps()[0])
    with pytest.raises(pc.LaunchError, match=r"encoding a tensor map needs the CUDA driver"):
        spec.encode_raw(0x10000, (64, 64), (64, 1))


def test_a_launch_without_a_gpu_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(pc.LaunchError, match=r"launching needs a CUDA GPU: torch sees none"):
        Launcher.of(HopperGemm())


def test_the_package_imports_without_torch_and_a_launch_says_torch_is_missing():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import pycute.kernels, pycute.kernels.hopper_gemm as h\n"
            "from pycute.kernels.launcher import Launcher\n"
            "try:\n    Launcher.of(h.HopperGemm())\nexcept pycute.LaunchError as e:\n    print(e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "launching a pycute kernel needs torch (pip install torch)" in run.stdout
