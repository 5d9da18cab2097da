"""Bad input at every public entry point gets a typed error naming what was wrong: LayoutError, PlanError,
DescriptorError, CompileError, EmulationError (all ValueErrors), or TypeError for a wrong type; never an exception
from deep inside and never a silently wrong result. numpy integers are integers everywhere."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.arch.sm100.tmem import alloc_columns_for, check_alloc_columns
from pycute.atoms.tcgen05_cp import find_cp_atom
from pycute.atoms.tcgen05_ldst import TmemLoadAtom
from pycute.compile import CompileCache, compile_cuda
from pycute.sim import Sm100Emulator

A = Layout((4, 8), (1, 4))


def nested(depth):
    t = 2
    for _ in range(depth):
        t = (t,)
    return t


def demo_tensors():
    src = pc.make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)))
    dst = pc.make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    return dst, src


def plan():
    return pc.make_tiled_copy(*demo_tensors())


L, T, P, D, C, E = pc.LayoutError, TypeError, pc.PlanError, pc.DescriptorError, pc.CompileError, pc.EmulationError

# id -> (call, error type, a fragment of its message)
BAD = {
    # -- the layout algebra: zero, negative, float, bool, text, None, too deep ---------------------------------
    "Layout zero extent": (lambda: Layout((4, 0)), L, "positive integers, got 0"),
    "Layout float extent": (lambda: Layout(4.0, 1), T, "shape entry must be an integer, got 4.0"),
    "Layout bool stride": (lambda: Layout(4, True), T, "stride entry must be an integer, got True"),
    "Layout text extent": (lambda: Layout((4, "x"), (1, 4)), T, "got 'x'"),
    "Layout not congruent": (lambda: Layout((4, 8), (1,)), L, "are not congruent"),
    "Layout nested 400 deep": (lambda: Layout(nested(400)), L, "nested deeper than 32"),
    "Layout mode out of range": (lambda: Layout((4, 8))[2], L, "has no mode 2"),
    "Layout mode index text": (lambda: Layout((4, 8))["a"], T, "a mode index must be an integer, got 'a'"),
    "evaluate text": (lambda: Layout(4, 2)("ab"), T, "coordinate must be an integer, got 'ab'"),
    "evaluate float": (lambda: Layout(4, 2)(1.5), T, "coordinate must be an integer, got 1.5"),
    "evaluate wrong rank": (lambda: A((1, 2, 3)), L, "does not match shape"),
    "size text": (lambda: pc.size((4, "x")), T, "shape entry must be an integer, got 'x'"),
    "size zero": (lambda: pc.size((4, 0)), L, "positive integers, got 0"),
    "crd2idx stride rank": (lambda: pc.crd2idx((1, 2), (4, 8), (1,)), L, "are not congruent"),
    "idx2crd zero extent": (lambda: pc.idx2crd(5, (4, 0)), L, "positive integers, got 0"),
    "idx2crd text": (lambda: pc.idx2crd("5", (4, 8)), T, "index must be an integer"),
    "composition by 0": (lambda: pc.composition(A, 0), L, "must be a positive size"),
    "composition by -1": (lambda: pc.composition(A, -1), L, "must be a positive size"),
    "composition by float": (lambda: pc.composition(A, 2.0), T, "the right operand must be a Layout"),
    "composition by text": (lambda: pc.composition(A, "4"), T, "the right operand must be a Layout"),
    "composition of text": (lambda: pc.composition("A", 4), L, "is not a layout"),
    "complement cotarget 0": (lambda: pc.complement(A, 0), L, "cotarget must be a positive integer"),
    "complement cotarget nan": (lambda: pc.complement(A, float("nan")), L, "cotarget must be a positive integer"),
    "complement of text": (lambda: pc.complement("x"), T, "expected a Layout"),
    "complement of -4": (lambda: pc.complement(-4), L, "a size must be positive"),
    "logical_divide by 0": (lambda: pc.logical_divide(A, 0), L, "must be a positive size, got 0"),
    "logical_divide by float": (lambda: pc.logical_divide(A, 2.5), T, "a tiler must be a Layout"),
    "logical_divide deep tiler": (lambda: pc.logical_divide(A, (1, 1, 1)), L, "has more modes than"),
    "zipped_divide None mode": (lambda: pc.zipped_divide(A, (None, 2)), L, "is not a (tile, rest) pair"),
    "logical_product by 0": (lambda: pc.logical_product(A, 0), L, "must be a positive size, got 0"),
    "logical_product by -1": (lambda: pc.logical_product(A, -1), L, "must be a positive size, got -1"),
    "blocked_product by 0": (lambda: pc.blocked_product(A, 0), L, "a size must be positive, got 0"),
    "raked_product by -1": (lambda: pc.raked_product(A, -1), L, "a size must be positive, got -1"),
    "raked_product by text": (lambda: pc.raked_product(A, "x"), T, "expected a Layout"),
    "tile_to_shape text": (lambda: pc.tile_to_shape(A, ("x", 8)), T, "shape entry must be an integer"),
    "upcast by 0": (lambda: pc.upcast(A, 0), L, "factor must be a positive integer"),
    "upcast by text": (lambda: pc.upcast(A, "x"), T, "the factor must be an integer, got 'x'"),
    "downcast by 0": (lambda: pc.downcast(A, 0), L, "factor must be a positive integer"),
    "downcast by text": (lambda: pc.downcast(A, "x"), T, "the factor must be an integer, got 'x'"),
    "recast by float width": (lambda: pc.recast(A, 8, 16.0), T, "a width in bits must be an integer"),
    "make_ordered_layout order": (lambda: pc.make_ordered_layout((4, 8), (0,)), L, "is not congruent"),
    "Swizzle overlapping": (lambda: pc.Swizzle(3, 4, 2), L, "|S| must be at least B"),
    "Swizzle huge": (lambda: pc.Swizzle(2 ** 40, 0, 2 ** 40), L, "swizzles act on offsets below 2^64"),
    "Swizzle negative": (lambda: pc.Swizzle(-1, 4, 3), L, "must be non-negative"),
    "Swizzle bool": (lambda: pc.Swizzle(True, 4, 3), T, "bits must be an integer, got True"),
    "parse trailing text": (lambda: pc.parse_layout("(32,16) (16,1)"), L, "unexpected text after the layout"),
    "parse unbalanced": (lambda: pc.parse_layout("4,8)"), L, "unexpected text after the layout"),
    "parse open": (lambda: pc.parse_layout("((4,2)"), L, "expected ',' or ')'"),
    "parse nested 500": (lambda: pc.parse_layout("(" * 500 + "2" + ")" * 500), L, "nested deeper than 32"),
    "parse not text": (lambda: pc.parse_layout(4), T, "expected text"),
    "parse garbage": (lambda: pc.parse_layout("4:x"), L, "cannot parse layout"),
    # -- tensors and the planner ----------------------------------------------------------------------------
    "columns float": (lambda: pc.make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=32.0), T,
                      "columns must be an integer, got 32.0"),
    "columns 48": (lambda: pc.make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=48), P,
                   "allocation of 48 columns is illegal"),
    "base_align float": (lambda: pc.make_smem_tensor(pc.u8, A, base_align=1024.0), T, "must be an integer"),
    "base_align 24": (lambda: pc.make_smem_tensor(pc.u8, A, base_align=24), P, "power of two"),
    "unknown dtype": (lambda: pc.make_smem_tensor("u7", A), P, "unknown dtype 'u7'"),
    "dtype not a name": (lambda: pc.make_smem_tensor(8, A), T, "expected a DType or a name"),
    "DType zero bits": (lambda: pc.DType("z", 0), P, "0 bits per element"),
    "DType bool bits": (lambda: pc.DType("z", True), T, "bits must be an integer"),
    "region float bound": (lambda: demo_tensors()[1][0:32.0, 0:16], T, "slice bound of mode 0 must be an integer"),
    "region text index": (lambda: demo_tensors()[1]["a"], T, "index of mode 0 must be an integer"),
    "region out of range": (lambda: demo_tensors()[1][0:64, 0:16], P, "outside its extent 32"),
    "cta_group True": (lambda: pc.make_tiled_copy(*demo_tensors(), cta_group=True), T, "cta_group must be an integer"),
    "cta_group 1.0": (lambda: pc.make_tiled_copy(*demo_tensors(), cta_group=1.0), T, "cta_group must be an integer"),
    "cta_group 3": (lambda: pc.make_tiled_copy(*demo_tensors(), cta_group=3), P, "cta_group must be 1 or 2"),
    "shape not text": (lambda: pc.make_tiled_copy(*demo_tensors(), shape=128), T, "shape must be a string"),
    "multicast list": (lambda: pc.make_tiled_copy(*demo_tensors(), multicast=["warpx4"]), T,
                       "multicast must be a string"),
    "src a layout": (lambda: pc.make_tiled_copy(demo_tensors()[0], A), T, "src must be a shared-memory tensor"),
    "find_cp_atom bool group": (lambda: find_cp_atom("128x256b", "", True), T, "cta_group must be an integer"),
    "find_cp_atom shape": (lambda: find_cp_atom(5), T, "shape and multicast are strings"),
    "TmemLoadAtom bool num": (lambda: TmemLoadAtom("32x32b", True), T, ".num must be an integer, got True"),
    "TmemLoadAtom 3": (lambda: TmemLoadAtom("32x32b", 3), P, "is illegal"),
    "alloc_columns_for float": (lambda: alloc_columns_for(1.5), T, "columns must be an integer, got 1.5"),
    "alloc_columns_for 0": (lambda: alloc_columns_for(0), P, "cannot be allocated"),
    "check_alloc_columns bool": (lambda: check_alloc_columns(True), T, "must be an integer, got True"),
    # -- descriptors and plans ----------------------------------------------------------------------------------
    "descriptor bool base_offset": (lambda: pc.SmemDescriptor(base_offset=True), T, "base_offset must be an integer"),
    "descriptor lbo 8": (lambda: pc.SmemDescriptor(lbo=8), D, "is not 16-byte aligned"),
    "descriptor lbo too big": (lambda: pc.SmemDescriptor(lbo=1 << 18), D, "is outside"),
    "descriptor decode text": (lambda: pc.SmemDescriptor.decode("x"), T, "the descriptor must be an integer"),
    "descriptor_for 8": (lambda: plan().descriptor_for(8), D, "not 16-byte aligned"),
    "descriptor_for 1 MiB": (lambda: plan().descriptor_for(1 << 20), D, "is outside"),
    "descriptor_for float": (lambda: plan().descriptor_for(16.0), T, "must be an integer"),
    "stream tmem column 3": (lambda: plan().stream(0, 3), P, "not the base of a 32-column tcgen05.alloc"),
    "stream smem misaligned": (lambda: plan().stream(16, 0), P, "not aligned to the 1024 B"),
    "stream smem past the CTA": (lambda: plan().stream(232448, 0), P, "beyond the 232448 B"),
    "cuda name keyword": (lambda: plan().cuda(name="int"), C, "is not a C identifier"),
    "cuda name builtin": (lambda: plan().cuda(name="threadIdx"), C, "is not a C identifier"),
    "cuda name not text": (lambda: plan().cuda(name=5), T, "name must be a string"),
    "cuda issue mode": (lambda: plan().cuda(issue="thread"), C, "the calling convention is one of"),
    # -- compilation, emulation, verification ---------------------------------------------------------------
    "compile None": (lambda: compile_cuda(None), T, "source must be CUDA C++ text"),
    "compile cache text": (lambda: compile_cuda("x", cache="x"), T, "cache must be True, False, None"),
    "compile options text": (lambda: compile_cuda("x", options=[1]), T, "options a sequence of str"),
    "compile arch": (lambda: compile_cuda("x", arch="sm_70"), C, "unsupported arch"),
    "cache directory int": (lambda: CompileCache(5), T, "directory must be a path"),
    "emulator fill -1": (lambda: Sm100Emulator(fill_tmem=-1), E, "not a 32-bit TMEM cell value"),
    "emulator fill float": (lambda: Sm100Emulator(fill_tmem=1.0), T, "fill_tmem must be an integer"),
    "emulator 3 CTAs": (lambda: Sm100Emulator(ctas=3), E, "Sm100Emulator models 1 to 2 CTAs"),
    "emulator cta 5": (lambda: Sm100Emulator().write_smem(0, b"x", cta=5), E, "CTA 5 does not exist"),
    "emulator cta -1": (lambda: Sm100Emulator().tmem_image(cta=-1), E, "CTA -1 does not exist"),
    "emulator cta text": (lambda: Sm100Emulator().tmem_image(cta="0"), T, "cta must be an integer"),
    "emulator smem past window": (lambda: Sm100Emulator(smem_bytes=1 << 19), E, "window a descriptor can address"),
    "verify text": (lambda: pc.verify_plan("x"), T, "expected a Tcgen05CpPlan"),
    # -- composing into a kernel: run-time coordinates, placement, compile and launch options ------------------
    "dynamic name not a C parameter": (lambda: pc.dynamic("tmem_base"), P, "becomes a C parameter"),
    "dynamic name not a string": (lambda: pc.dynamic(3), T, "the name must be a string"),
    "dynamic index repeated": (lambda: pc.make_smem_tensor(pc.u8, Layout((4, 4, 4), (1, 16, 64)))[
        :, pc.dynamic("s"), pc.dynamic("s")], P, "repeat"),
    "dynamic value out of range": (lambda: pc.make_smem_tensor(pc.u8, Layout((16, 4), (1, 512)))[
        :, pc.dynamic("stage")].at(stage=4), P, "stage=4 is outside [0, 4)"),
    "dynamic value missing": (lambda: pc.make_smem_tensor(pc.u8, Layout((16, 4), (1, 512)))[
        :, pc.dynamic("stage")].at(), P, "needs a value"),
    "dynamic value a float": (lambda: pc.make_smem_tensor(pc.u8, Layout((16, 4), (1, 512)))[
        :, pc.dynamic("stage")].at(stage=1.5), T, "must be an integer"),
    "static plan given a value": (lambda: plan().at(stage=1), P, "has no run-time coordinates"),
    "allocation overlap": (lambda: (lambda a: (a.add(pc.f32, Layout((128, 8), (TLane, TCol)), name="x"),
                                               a.add(pc.f32, Layout((128, 8), (TLane, TCol)), column=4)))(
        pc.TmemAllocation()), P, "overlaps 'x'"),
    "allocation misaligned": (lambda: pc.TmemAllocation().add(pc.f32, Layout((128, 8), (TLane, TCol)), column=6),
                              P, "misaligned"),
    "allocation past 512 columns": (lambda: pc.TmemAllocation().add(pc.f32, Layout((128, 8), (TLane, TCol)),
                                                                    column=508), P, "past TMEM's 512 columns"),
    "allocation column out of range": (lambda: pc.TmemAllocation().add(pc.f32, Layout((128, 8), (TLane, TCol)),
                                                                       column=600), P, "outside TMEM's 512 columns"),
    "allocation name not a string": (lambda: pc.TmemAllocation().add(pc.f32, Layout((128, 8), (TLane, TCol)),
                                                                     name=7), T, "name must be a string"),
    "allocation cta_group 3": (lambda: pc.TmemAllocation(cta_group=3), P, "cta_group must be 1 or 2"),
    "include_dirs a string": (lambda: compile_cuda("", include_dirs="/tmp"), T, "include_dirs must be a sequence"),
    "include dir missing": (lambda: compile_cuda("", include_dirs=["/nonexistent/pycute"]), C, "does not exist"),
    "explain not a bool": (lambda: plan().cuda("f", explain="yes"), T, "explain must be a bool"),
    # -- tcgen05.ld/st plans and MMA accumulators -------------------------------------------------------------
    "tmem copy of a Layout": (lambda: pc.make_tmem_copy(A), T, "expected a TMEM tensor"),
    "tmem copy op": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), op="cp"), P, "op is 'ld'"),
    "tmem copy warps 0": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), warps=0), P,
                          "1 to 4 warps"),
    "tmem copy warps a float": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), warps=4.0), T,
                                "must be an integer"),
    "tmem copy warp outside its quadrant": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32),
                                                                      warps=1), P, "no warp reaches them"),
    "tmem copy cap below one instruction": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32),
                                                                      shape="16x256b", max_registers=3), P,
                                            "above the register cap of 3"),
    "tmem copy pack on 32-bit data": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), pack=True),
                                      P, "moves 16-bit values"),
    "tmem copy pack not a bool": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), pack=1), T,
                                  "pack must be True, False or None"),
    "tmem copy unknown shape": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), shape="8x8b"), P,
                                "unknown shape"),
    "tmem copy half offset past the tensor": (lambda: pc.make_tmem_copy(pc.make_tmem_tensor(
        pc.f32, Layout(((16, 4), 7), ((TLane, 32 * TLane), TCol)), columns=32), shape="16x32bx2"), P,
        "do not split into the two halves"),
    "tmem copy past the allocation": (lambda: pc.make_tmem_copy(pc.make_tmem_tensor(
        pc.f32, Layout((128, 48), (TLane, TCol)), columns=32)), P, "run past its 32-column allocation"),
    "tmem copy lane base 8": (lambda: pc.make_tmem_copy(pc.make_tmem_tensor(
        pc.f32, Layout((32, 8), (TLane, TCol)), columns=32)[8:24, :], warps=1), P, "undefined in the PTX text"),
    "tmem copy fragment not a layout": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32),
                                                                  fragment="(128,32):(1,128)"), T,
                                        "fragment must be a Layout"),
    "tmem copy fragment thread count": (lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32),
                                                                  fragment=Layout((64, 32), (1, 128))), P,
                                        "with 128 threads"),
    "accumulator N not an MMA width": (lambda: pc.mma_accumulator(pc.f32, 128, 12), P, "is not an MMA width"),
    "accumulator 8-bit": (lambda: pc.mma_accumulator(pc.u8, 128, 32), P, "32-bit or 16-bit values"),
    "accumulator layout G": (lambda: pc.mma_accumulator(pc.f32, 32, 64, ws=True), P, "do not pin down"),
    "accumulator ws not a bool": (lambda: pc.mma_accumulator(pc.f32, 64, 64, ws=1), T, "ws must be a bool"),
    "tmem ld atom .x3": (lambda: TmemLoadAtom("32x32b", 3), P, "illegal"),
    "tmem ld atom .x128 16x128b": (lambda: TmemLoadAtom("16x128b", 128), P, "illegal"),
    # -- feeding tcgen05.mma --------------------------------------------------------------------------------
    "umma desc of a Layout": (lambda: pc.make_umma_desc(A), T, "expected a shared-memory tensor"),
    "umma desc rank 3": (lambda: pc.make_umma_desc(pc.make_smem_tensor(pc.bf16, Layout((8, 8, 2), (8, 1, 64)))), D,
                         "has rank 3"),
    "umma desc major typo": (lambda: pc.make_umma_desc(pc.make_smem_tensor(pc.bf16, Layout((128, 16), (16, 1))),
                                                       major="k"), D, "major is 'K' or 'MN'"),
    "umma desc K not whole MMAs": (lambda: pc.make_umma_desc(pc.make_smem_tensor(pc.bf16, Layout((128, 8), (8, 1)))),
                                   D, "not whole MMA operands"),
    "umma desc fp6": (lambda: pc.make_umma_desc(pc.make_smem_tensor(pc.f6e2m3, Layout((128, 32), (32, 1)))), D,
                      "are not addressed by a descriptor"),
    "umma k-block out of range": (lambda: pc.make_umma_desc(pc.make_smem_tensor(
        pc.bf16, Layout((8, 16), (8, 1)))).k_block_offset(1), D, "outside the tile's 1"),
    "instr desc kind not a string": (lambda: pc.make_instr_desc(3, pc.f16, pc.f16), T, "kind must be a string"),
    "instr desc unknown dtype": (lambda: pc.make_instr_desc("f16", "f17", "f16"), D, "unknown dtype 'f17'"),
    "instr desc M a float": (lambda: pc.make_instr_desc("f16", "f16", "f16", M=128.0), T, "must be an integer"),
    "instr desc negate not a bool": (lambda: pc.make_instr_desc("f16", "f16", "f16", negate_a=1), T,
                                     "negate_a must be a bool"),
    "instr desc decode a string": (lambda: pc.InstrDescriptor.decode("f16", "0x1"), T, "must be an integer"),
    "scale factors of a dense kind": (lambda: pc.scale_factor_tensor("f16", 128), P, "block-scaled kinds"),
    "scale factors 100 rows": (lambda: pc.scale_factor_tensor("mxf8f6f4", 100), P, "a multiple of 32"),
    "scale factors 3 MMAs of 2X": (lambda: pc.scale_factor_tensor("mxf4", 128, mmas=3), P, "whole cells of 4"),
    "scale check of a Layout": (lambda: pc.check_scale_factor_copy(plan(), A), T, "expected a ScaleFactorTensor"),
    "decompress b6x16": (lambda: pc.make_tiled_copy(*demo_tensors(), decompress="b6x16_p32"), P,
                         "6-bit container placement"),
    "decompress unknown": (lambda: pc.make_tiled_copy(*demo_tensors(), decompress="b2x16"), P,
                           "tcgen05.cp decompresses b4x16_p64"),
    "decompress not a string": (lambda: pc.make_tiled_copy(*demo_tensors(), decompress=4), T,
                                "decompress must be a string"),
    "verify_operand of a plan": (lambda: pc.verify_operand(plan()), T, "expected a UmmaDescriptor"),
    # -- the issue 19 probe's edges ---------------------------------------------------------------------------
    "product of a string": (lambda: pc.product("x"), T, "product: a leaf must be an integer, got 'x'"),
    "prefix_product of a string": (lambda: pc.prefix_product("x"), T, "a leaf must be an integer"),
    "tuple_max of strings": (lambda: pc.tuple_max(("x",)), T, "a leaf must be an integer"),
    "flatten of a string": (lambda: pc.flatten("ab"), T, "'ab' is not an IntTuple"),
    "ComposedLayout string offset": (lambda: pc.ComposedLayout(pc.Swizzle(3, 3, 3), "x", Layout(8)), T,
                                     "the offset must be an integer"),
    "ComposedLayout float offset": (lambda: pc.ComposedLayout(pc.Swizzle(3, 3, 3), 1.5, Layout(8)), T,
                                    "the offset must be an integer"),
    "Layout mode a float": (lambda: Layout((4, 8))[1.0], T, "a mode index must be an integer"),
    "RoundTrip of None": (lambda: __import__("pycute.harness", fromlist=["RoundTrip"]).RoundTrip(None), T,
                          "RoundTrip: expected a Tcgen05CpPlan"),
    "emulator cp opcode None": (lambda: Sm100Emulator().cp(None, 0, 0), T, "the opcode must be a string"),
    "PTX interpreter malformed statement": (lambda: __import__("pycute.interp.stream", fromlist=["run_entry"]).run_entry(
        ".visible .entry k(){\n\tadd.u32 ;\n}", {}, {}), C, "is malformed for the interpreter"),
    "PTX interpreter not text": (lambda: __import__("pycute.interp.stream", fromlist=["run_entry"]).run_entry(
        None, {}, {}), T, "the PTX must be text"),
    # -- the kernel author's surface, now at the top level ------------------------------------------------------
    "commit_asm cta_group 3": (lambda: pc.commit_asm(3, "bar"), P, "cta_group must be 1 or 2, not 3"),
    "commit_asm mbarrier an int": (lambda: pc.commit_asm(1, 5), T, "mbarrier must be a C expression string"),
    "probe_source of None": (lambda: pc.probe_source(None), T, "probe_source: expected a Tcgen05CpPlan"),
    "atom_tmem_tensor of None": (lambda: pc.atom_tmem_tensor(pc.bf16, None, 64), T, "expected a tcgen05.cp atom"),
    "atom_tmem_tensor of an ld atom class": (lambda: pc.atom_tmem_tensor(pc.bf16, pc.TmemLoadAtom, 64), T,
                                             "expected a tcgen05.cp atom"),
    "kmajor_smem_tensor unknown swizzle": (lambda: pc.kmajor_smem_tensor(pc.bf16, 128, 64, "99B"), P,
                                           "unknown swizzle '99B'"),
    "kmajor_smem_tensor partial core group": (lambda: pc.kmajor_smem_tensor(pc.bf16, 100, 64), P,
                                              "whole 8-row core groups; 100 rows given"),
    # -- the copy family's house: tensors by memory space, copy_async, verify --------------------------------------
    "copy_async src None": (lambda: pc.copy_async(pc.make_fragment(pc.f32, 128), None), T,
                            "copy_async: src must be a pycute tensor"),
    "copy_async variant an int": (lambda: pc.copy_async(pc.make_fragment(pc.f32, 128),
                                                        pc.mma_accumulator(pc.f32, 128, 32), variant=1), T,
                                  "variant must be a string or None, got 1"),
    "copy_async arch an int": (lambda: pc.copy_async(pc.make_fragment(pc.f32, 128),
                                                     pc.mma_accumulator(pc.f32, 128, 32), arch=90), T,
                               "arch must be a string or None, got 90"),
    "make_fragment threads a float": (lambda: pc.make_fragment(pc.f32, 32.0), T, "make_fragment: threads"),
    "make_fragment dtype unknown": (lambda: pc.make_fragment("f7", 32), P, "f7"),
    "make_global_tensor base_align a string": (lambda: pc.make_global_tensor(pc.f32, Layout(4), "16"), T,
                                               "make_global_tensor: base_align"),
    "verify of a layout": (lambda: pc.verify(Layout(4)), T, "verify: expected a copy plan"),
    # -- the last loose edges of the 977-input probe -----------------------------------------------------------
    "shape_div of a zero shape": (lambda: pc.shape_div(0, 4), L, "shapes are positive integers (or tuples of them), got 0 and 4"),
    "shape_div by a negative": (lambda: pc.shape_div(4, -2), L, "got 4 and -2"),
    "shape_div of a string": (lambda: pc.shape_div("4", 2), T, "shape_div: shapes are positive integers"),
    "inner_product of a string": (lambda: pc.inner_product("a", 2), T, "inner_product: leaves are integers"),
    "coalesce profile a string": (lambda: pc.coalesce(Layout((2, 2)), "x"), T, "coalesce: the profile must be"),
    "coalesce profile a float": (lambda: pc.coalesce(Layout((2, 2)), 1.5), T, "coalesce: the profile must be"),
    "filter profile a string": (lambda: pc.filter(Layout((2, 2)), "x"), T, "filter: the profile must be"),
    "max_common_layout of None": (lambda: pc.max_common_layout(Layout(4), None), T,
                                  "max_common_layout: expected a Layout"),
    "E of a list": (lambda: pc.E([1]), T, "E: the axis is a non-negative int"),
    "E of a negative axis": (lambda: pc.E(-1), T, "E: the axis is a non-negative int"),
    "tensor of a 12-bit dtype": (lambda: pc.make_smem_tensor(pc.DType("weird", 12), Layout(4)), P,
                                 "weird has 12-bit elements"),
    "TMEM tensor of a 12-bit dtype": (lambda: pc.make_tmem_tensor(pc.DType("weird", 12), Layout(4, pc.TCol)), P,
                                      "make_tmem_tensor: weird has 12-bit elements"),
    "ComposedLayout outer a lambda": (lambda: pc.ComposedLayout(lambda x: x, 0, Layout(4)), T,
                                      "outer must be a Swizzle or a layout"),
    "expected_tmem of a string": (lambda: pc.expected_tmem("x", None, None, None, 0), T,
                                  "expected_tmem: expected a shared-memory and a TMEM tensor, got str"),
    "RoundTrip run on None": (lambda: __import__("pycute.harness", fromlist=["RoundTrip"]).RoundTrip(
        pc.make_tiled_copy(pc.make_tmem_tensor(pc.u8, Layout((32, 16), (pc.TLane, pc.TCol)),
                                               replica=Layout(4, 32 * pc.TLane), columns=32),
                           pc.make_smem_tensor(pc.u8, Layout((32, 16), (16, 1))))).run(None), T,
        "expected a pycute.compile.runtime.Gpu to launch on, got NoneType"),
    "shiftl by 2**40": (lambda: pc.shiftl(1, 2 ** 40), L, "shiftl: a shift of 1099511627776 bits"),
    "shiftr by a float": (lambda: pc.shiftr(1, 1.5), T, "shiftr: the shift"),
    # -- TMA ----------------------------------------------------------------------------------------------------
    "make_tma_copy of None": (lambda: pc.make_tma_copy(None, pc.make_global_tensor(pc.f32, Layout(64))), T,
                              "one tensor is a global array"),
    "make_tma_copy multicast a string": (lambda: pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))),
                                                                  pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))),
                                                                  multicast="2"), T, "make_tma_copy: multicast"),
    "make_tma_copy reduce an int": (lambda: pc.make_tma_copy(pc.make_global_tensor(pc.u32, Layout((64, 32), (32, 1))),
                                                             pc.make_smem_tensor(pc.u32, Layout((8, 32), (32, 1))),
                                                             reduce=1), T, "reduce must be one of add"),
    "make_tma_copy oob_fill unknown": (lambda: pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))),
                                                                pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))),
                                                                oob_fill="inf"), P, "oob_fill='inf'"),
    "TMA stream tile index a float": (lambda: pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))),
                                                               pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1)))
                                                               ).stream(0, 1.5, 0), T, "tile index of mode 0"),
    "make_tma_copy cta_group a string": (lambda: pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))),
                                                                  pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))),
                                                                  cta_group="2"), T, "make_tma_copy: cta_group"),
    "make_cp_async_copy threads a string": (lambda: pc.make_cp_async_copy(
        pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))), pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))),
        threads="128"), T, "make_cp_async_copy: threads"),
    "make_cp_async_copy of a store": (lambda: pc.make_cp_async_copy(
        pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))), pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1)))),
        T, "into a shared tile"),
    "cp.async stream of a thread past the plan": (lambda: pc.make_cp_async_copy(
        pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))), pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))),
        threads=32).stream(0, 0, 0, thread=32), P, "thread 32 is not one of the plan's 32"),
    "make_bulk_copy of two shared tiles": (lambda: pc.make_bulk_copy(pc.make_smem_tensor(pc.f32, Layout(64, 1)),
                                                                     pc.make_smem_tensor(pc.f32, Layout(64, 1))),
                                           T, "one tensor is a global array"),
    "make_dsmem_copy of a global array": (lambda: pc.make_dsmem_copy(pc.make_smem_tensor(pc.f32, Layout(64, 1)),
                                                                     pc.make_global_tensor(pc.f32, Layout(64, 1))),
                                          T, "both tensors are shared tiles"),
    "make_dsmem_copy of different extents": (lambda: pc.make_dsmem_copy(pc.make_smem_tensor(pc.f32, Layout(64, 1)),
                                                                        pc.make_smem_tensor(pc.f32, Layout(32, 1))),
                                             P, "the tiles' extents differ ((32,) and (64,))"),
    "copy_async completion unknown": (lambda: pc.copy_async(pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))),
                                                            pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))),
                                                            variant="cp_async", completion="fence"),
                                      P, "completion='fence'"),
    "TMA stream of a negative tile": (lambda: pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((8, 32), (32, 1))),
                                                               pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1)))
                                                               ).stream(0, -1, 0), P, "tile index -1 of mode 0 is negative"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_gets_a_typed_error_naming_it(case):
    call, error, fragment = BAD[case]
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)
    if error is not TypeError:
        assert isinstance(info.value, pc.PycuteError) and isinstance(info.value, ValueError)


# -- numpy integers are integers ----------------------------------------------------------------------------
I = np.int64

SAME = {
    "Layout": (lambda: Layout((I(4), I(8)), (I(1), I(4))), lambda: Layout((4, 8), (1, 4))),
    "Swizzle": (lambda: pc.Swizzle(I(3), I(4), I(3)), lambda: pc.Swizzle(3, 4, 3)),
    "tiler": (lambda: pc.logical_divide(Layout((8, 8)), I(4)), lambda: pc.logical_divide(Layout((8, 8)), 4)),
    "tuple tiler": (lambda: pc.zipped_divide(Layout((8, 8)), (I(2), I(4))),
                    lambda: pc.zipped_divide(Layout((8, 8)), (2, 4))),
    "composition": (lambda: pc.composition(A, I(4)), lambda: pc.composition(A, 4)),
    "upcast": (lambda: pc.upcast(A, I(2)), lambda: pc.upcast(A, 2)),
    "crd2idx": (lambda: pc.crd2idx((I(1), I(2)), (4, 8)), lambda: pc.crd2idx((1, 2), (4, 8))),
    "SmemDescriptor": (lambda: pc.SmemDescriptor(lbo=I(16), sbo=np.int32(128)), lambda: pc.SmemDescriptor(lbo=16, sbo=128)),
    "tensor index": (lambda: demo_tensors()[1][I(0):I(32), I(0):I(16)], lambda: demo_tensors()[1][0:32, 0:16]),
    "columns": (lambda: pc.make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=np.int32(32)),
                lambda: pc.make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=32)),
    "cta_group": (lambda: pc.make_tiled_copy(*demo_tensors(), cta_group=I(1)),
                  lambda: pc.make_tiled_copy(*demo_tensors(), cta_group=1)),
    "descriptor_for": (lambda: plan().descriptor_for(I(1024)), lambda: plan().descriptor_for(1024)),
    "Layout mode": (lambda: Layout((4, 8), (1, 4))[I(1)], lambda: Layout((4, 8), (1, 4))[1]),
    "ComposedLayout offset": (lambda: pc.ComposedLayout(pc.Swizzle(3, 3, 3), I(8), Layout(8)),
                              lambda: pc.ComposedLayout(pc.Swizzle(3, 3, 3), 8, Layout(8))),
    "SmemDescriptor.decode": (lambda: pc.SmemDescriptor.decode(np.uint64(pc.SmemDescriptor(sbo=128).encode())),
                              lambda: pc.SmemDescriptor.decode(pc.SmemDescriptor(sbo=128).encode())),
}


@pytest.mark.parametrize("case", SAME)
def test_numpy_integers_give_the_same_result_as_ints(case):
    with_numpy, with_ints = SAME[case]
    got, want = with_numpy(), with_ints()
    assert got == want and repr(got) == repr(want)
    assert "int64" not in repr(got) and "int32" not in repr(got)
