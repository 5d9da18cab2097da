"""A user's own kernel -- launch bounds, cluster dims, a k-loop that copies stage kb % 4 and commits -- interpreted
at the PTX level: the stream it issues is the plans' stream, stage by stage."""
from examples.blockscaled_sf_pipeline import STAGES, SfPipeline
from pycute.compile import compile_cuda
from pycute.interp.stream import trace_entry

K_BLOCKS = 6
SMEM = {"sfa_smem": 0x400, "sfb_smem": 0x1000}


def user_kernel(example) -> str:
    g = example.cta_group
    return example.sfa_plan.cuda("copy_sfa") + example.sfb_plan.cuda("copy_sfb") + f"""
extern "C" __global__ void __launch_bounds__(128, 1) __cluster_dims__({g}, 1, 1) mma_warp(unsigned tmem, unsigned mbar) {{
  __shared__ __align__(1024) unsigned char sfa_smem[{STAGES * 512}];
  __shared__ __align__(1024) unsigned char sfb_smem[{STAGES * 1024}];
#pragma unroll 1
  for (unsigned kb = 0; kb < {K_BLOCKS}u; ++kb) {{
    copy_sfa(sfa_smem, tmem, kb % {STAGES}u);
    copy_sfb(sfb_smem, tmem, kb % {STAGES}u);
    if (pycute_elect_one_sync()) pycute_tcgen05_commit<{g}>(mbar);
  }}
}}
"""


def test_a_user_kernel_with_launch_bounds_and_cluster_dims_issues_the_planned_stream_every_k_block():
    for g in (1, 2):
        example = SfPipeline(g)
        ptx = compile_cuda(user_kernel(example)).ptx
        assert ".maxntid 128" in ptx and (".reqnctapercluster" in ptx or ".explicitcluster" in ptx)
        thread = trace_entry(ptx, {0: 0, 1: 0x80}, SMEM, "mma_warp")
        want = []
        for kb in range(K_BLOCKS):
            want += example.sfa_plan.stream(SMEM["sfa_smem"], 0, stage=kb % STAGES)
            want += example.sfb_plan.stream(SMEM["sfb_smem"], 0, stage=kb % STAGES)
        assert thread.issued == want
        commits = [t for t in thread.trace if t[0].startswith("tcgen05.commit")]
        assert len(commits) == K_BLOCKS and all(f"cta_group::{g}" in op for op, _ in commits)


def test_other_lanes_of_the_warp_issue_nothing():
    ptx = compile_cuda(user_kernel(SfPipeline(1))).ptx
    assert trace_entry(ptx, {0: 0, 1: 0x80}, SMEM, "mma_warp", lane=7).issued == []
