"""The Hopper GEMM, ``D = scale * A B^T`` on sm_90a, lives in pycute/kernels/hopper_gemm (docs/kernels.md,
docs/hopper-gemm.md). ``python examples/hopper_gemm.py`` prints the configuration ``choose`` picks for a problem,
its plans, and the sm_90a SASS counts of its compiled kernel."""
from pycute.kernels.hopper_gemm import choose

if __name__ == "__main__":
    g = choose(4096, 4096, 4096)
    print(g.explain())
    sass = g.compile().histogram()
    print("sm_90a SASS:", {op: n for op, n in sorted(sass.items()) if "GMMA" in op or op.startswith(("STSM", "UTMA"))})
