"""Hand-written PTX for the whole-kernel tests: a one-entry module around a body, run on the CPU."""
import numpy as np

from pycute.interp import run_kernel

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
REGS = ("\t.reg .pred %p<8>;\n\t.reg .b16 %h<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<16>;\n\t.reg .f32 %f<8>;\n"
        "\t.reg .b64 %out;\n")


def entry(body: str, name: str = "k", params: str = ".param .u64 out") -> str:
    return f"{HEADER}.visible .entry {name}({params})\n{{\n{REGS}\tld.param.u64 %out, [out];\n{body}\n\tret;\n}}\n"


def run_body(body: str, words: int = 4, threads: int = 1, **kw) -> np.ndarray:
    """Run ``body`` (which stores into ``[%out + ...]``) on ``threads`` threads; the uint32 words it stored."""
    out = np.zeros(words, dtype=np.uint32)
    run_kernel(entry(body), block=threads, args=[out], **kw)
    return out
