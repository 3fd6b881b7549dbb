"""A census of what ptxas emits for sm_90a: every opcode and modifier form nvdisasm prints in
the cubins of the corpus kernels and examples (`sass_cubins`), the H200's own builds of them,
the PTX kernels of the analysis tests, and the kernels of `census_kernels` compiled over the
dtypes and options that provoke the forms other people's kernels bring.

`python tests/sass_census.py` prints the census (base opcodes, with each form and how many
cubins have it); `tests/test_sass_census.py` checks that registers.py models them all."""
import collections
import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # as pytest runs it: its pythonpath (tests/, the root) and conftest's fusion setting
    sys.path[:0] = [HERE, os.path.dirname(HERE)]
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton.language as tl  # noqa: E402

import census_kernels as k  # noqa: E402
import corpus  # noqa: E402
import sass_cubins  # noqa: E402
import sass_ptx_kernels  # noqa: E402
from gwatch_nb.sass.disasm import disassemble  # noqa: E402

BLOCK = 256


def _case(name, fn, signature, constexprs=None, num_warps=4, num_stages=3) -> corpus.Case:
    return corpus.Case(name, fn, signature, constexprs or {}, num_warps=num_warps, num_stages=num_stages)


def _elementwise(name, fn, pointers: str, dtype: str, num_warps=4, **constexprs) -> corpus.Case:
    """A kernel whose pointer parameters (space-separated names) are all of `dtype`, then N."""
    signature = {p: f"*{dtype}" for p in pointers.split()}
    return _case(name, fn, dict(signature, N="i32"), dict(BLOCK=BLOCK, **constexprs), num_warps=num_warps)


_ATOMIC_OPS = {
    "fp32": "add xchg max min", "fp16": "add", "bf16": "add", "fp64": "add", "i32": "add max min and or xor xchg cas",
    "u32": "add max min and or xor", "i64": "add max min and or xor xchg cas", "u64": "add max min and or xor",
}


def _atomics():
    cases = []
    for dtype, ops in _ATOMIC_OPS.items():
        for op in ops.split():
            cases.append(_case(f"atomic {op} {dtype}", k.atomics, {"X": f"*{dtype}", "Out": f"*{dtype}",
                                                                  "Cmp": f"*{dtype}", "N": "i32"},
                               dict(BLOCK=BLOCK, OP=op, SEM="acq_rel", SCOPE="gpu")))
    for sem in ("relaxed", "acquire", "release"):
        for scope in ("cta", "sys"):
            cases.append(_case(f"atomic add i32 {sem} {scope}", k.atomics, {"X": "*i32", "Out": "*i32",
                                                                           "Cmp": "*i32", "N": "i32"},
                               dict(BLOCK=BLOCK, OP="add", SEM=sem, SCOPE=scope)))
    cases.append(_case("atomic cas i32 relaxed sys", k.atomics, {"X": "*i32", "Out": "*i32", "Cmp": "*i32", "N": "i32"},
                       dict(BLOCK=BLOCK, OP="cas", SEM="relaxed", SCOPE="sys")))
    for dtype in ("fp32", "fp16", "i64"):
        cases.append(_elementwise(f"atomic add unused {dtype}", k.atomic_unused, "X Out", dtype))
    cases.append(_case("spin lock", k.spin_lock, {"Lock": "*i32", "Out": "*i32", "N": "i32"}, num_warps=1))
    return cases


def _dot(name, a, b, c, acc, precision="ieee", m=64, n=64, kk=64, num_warps=4, num_stages=3):
    return _case(f"dot {name}", k.dot, {"A": f"*{a}", "B": f"*{b}", "C": f"*{c}", "K": "i32"},
                 dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=kk, PRECISION=precision, ACC=acc), num_warps=num_warps,
                 num_stages=num_stages)


def _dots():
    f32, f16, i32 = tl.float32, tl.float16, tl.int32
    cases = [
        _dot("fp8e4nv wgmma", "fp8e4nv", "fp8e4nv", "fp16", f32, m=128, n=128),
        _dot("fp8e5 wgmma", "fp8e5", "fp8e5", "fp32", f32, m=128, n=64),
        _dot("fp8e4nv x fp8e5 wgmma", "fp8e4nv", "fp8e5", "fp32", f32),
        _dot("fp8e4nv wgmma fp16 acc", "fp8e4nv", "fp8e4nv", "fp16", f16),
        _dot("fp8e4nv mma v2", "fp8e4nv", "fp8e4nv", "fp32", f32, m=16, n=16, kk=32, num_warps=1),
        _dot("int8 wgmma", "i8", "i8", "i32", i32, m=128, n=128),
        _dot("int8 mma v2", "i8", "i8", "i32", i32, m=16, n=16, kk=32, num_warps=1),
        _dot("bf16 wgmma", "bf16", "bf16", "bf16", f32, m=128, n=256, num_warps=8),
        _dot("bf16 mma v2", "bf16", "bf16", "fp32", f32, m=16, n=32, num_warps=1),
        _dot("fp16 wgmma fp16 acc", "fp16", "fp16", "fp16", f16),
        _dot("fp16 mma v2 fp16 acc", "fp16", "fp16", "fp16", f16, m=16, n=32, num_warps=1),
        _dot("tf32 wgmma", "fp32", "fp32", "fp32", f32, "tf32"),
        _dot("tf32x3 wgmma", "fp32", "fp32", "fp32", f32, "tf32x3"),
        _dot("tf32 mma v2", "fp32", "fp32", "fp32", f32, "tf32", m=16, n=16, kk=16, num_warps=1),
        _dot("fp32 ieee", "fp32", "fp32", "fp32", f32, "ieee", m=32, n=32, kk=16),
        _dot("fp64", "fp64", "fp64", "fp64", tl.float64, "ieee", m=32, n=32, kk=16),
    ]
    for fmt, dtype in (("e4m3", "fp8e4nv"), ("e5m2", "fp8e5")):
        cases.append(_case(f"dot_scaled {fmt}", k.dot_scaled, {"A": f"*{dtype}", "B": f"*{dtype}", "AScale": "*u8",
                                                              "BScale": "*u8", "C": "*fp32"},
                           dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, FORMAT=fmt)))
    return cases


def _arithmetic():
    cases = []
    for dtype in ("i32", "u32", "i64", "u64", "i16", "i8", "fp32", "fp16", "bf16", "fp64"):
        cases.append(_case(f"reductions {dtype}", k.reductions, {"X": f"*{dtype}", "Out": f"*{dtype}"},
                           dict(BLOCK=BLOCK, INTEGER=dtype[0] in "iu")))
        cases.append(_elementwise(f"minmax3 {dtype}", k.minmax3, "X Y Z Out", dtype))
    for dtype in ("i32", "u32", "i64", "u64", "i16", "i8"):
        cases.append(_elementwise(f"integer division {dtype}", k.integer_division, "X Y Out", dtype))
    cases.append(_elementwise("float math fp32", k.float_math, "X Y Out", "fp32"))
    cases.append(_elementwise("double math", k.double_math, "X Y Out", "fp64"))
    for dtype in ("fp16", "bf16"):
        cases.append(_elementwise(f"half math {dtype}", k.half_math, "X Y Out", dtype))
    for dtype in ("fp32", "fp64"):
        cases.append(_elementwise(f"libdevice {dtype}", k.libdevice_math, "X Y Out", dtype))
    for dtype in ("i32", "i64"):
        cases.append(_elementwise(f"integer math {dtype}", k.integer_math, "X Y Out", dtype))
    cases.append(_elementwise("inline asm", k.inline_asm, "X Y Out", "i32"))
    cases.append(_case("random", k.random, {"Out": "*fp32", "seed": "i32", "N": "i32"}, dict(BLOCK=BLOCK)))
    cases.append(_case("special registers", k.special_registers, {"Out": "*i64"}, num_warps=1))
    cases.append(_case("int64 index", k.int64_index, {"X": "*i8", "Out": "*i8", "stride": "i64", "N": "i32"},
                       dict(BLOCK=1024)))
    cases.append(_case("gelu tanh fp16", k.gelu_tanh, {"X": "*fp16", "Out": "*fp16", "N": "i32"}, dict(BLOCK=1024)))
    cases.append(_case("rms norm rope", k.rms_norm_rope, {"X": "*bf16", "W": "*fp32", "Cos": "*fp32", "Sin": "*fp32",
                                                          "Out": "*bf16", "N": "i32"}, dict(BLOCK=128)))
    cases.append(_case("noinline call", k.noinline_call, {"X": "*fp32", "Out": "*fp32", "N": "i32"}, num_warps=1))
    return cases


def _conversions():
    cases = []
    pairs = [("fp32", "fp8e4nv", "rtne"), ("fp32", "fp8e5", "rtne"), ("fp16", "fp8e4nv", ""), ("fp16", "fp8e5", ""),
             ("bf16", "fp8e4nv", ""), ("bf16", "fp8e5", ""), ("fp32", "fp8e5", "rtz"), ("fp32", "bf16", "rtz"),
             ("fp32", "fp16", "rtz"), ("fp8e4nv", "fp32", ""), ("fp8e5", "fp16", ""), ("fp8e4nv", "bf16", ""),
             ("fp64", "bf16", ""), ("fp64", "i64", ""), ("i64", "fp16", ""),
             ("u8", "fp32", ""), ("i8", "bf16", ""), ("fp32", "u8", ""), ("fp32", "i16", ""), ("u64", "fp64", ""),
             ("fp16", "fp64", ""), ("i32", "fp64", ""), ("fp32", "fp8e4b15", ""), ("fp8e4b15", "fp32", "")]
    for src, dst, rounding in pairs:
        out = {"fp8e4nv": "fp16", "fp8e5": "fp16", "fp8e4b15": "fp16"}.get(dst, dst)
        cases.append(_case(f"convert {src} to {dst}{' ' + rounding if rounding else ''}", k.conversions,
                           {"X": f"*{src}", "Out": f"*{out}", "N": "i32"},
                           dict(BLOCK=1024, TO=getattr(tl, _TL[dst]), ROUNDING=rounding)))
    for fp8 in ("fp8e4nv", "fp8e5"):
        cases.append(_case(f"fp8 quantize {fp8}", k.fp8_quantize, {"X": "*bf16", "Q": f"*{fp8}", "Scale": "*fp32",
                                                                   "N": "i32"},
                           dict(BLOCK=32, GROUP=128, FP8=getattr(tl, _TL[fp8]))))
    cases.append(_case("fp8 transpose quantize", k.fp8_transpose_quantize, {"X": "*fp32", "Q": "*fp8e4nv"},
                       dict(BLOCK=64)))
    return cases


_TL = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "fp8e4nv": "float8e4nv",
       "fp8e5": "float8e5", "fp8e4b15": "float8e4b15", "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8",
       "u8": "uint8", "u64": "uint64"}


def _structured():
    cases = []
    for dtype in ("fp32", "i32", "fp16", "i64"):
        cases.append(_case(f"sort scan {dtype}", k.sort_scan, {"X": f"*{dtype}", "Out": f"*{dtype}", "Idx": "*i32"},
                           dict(BLOCK=BLOCK)))
    cases.append(_case("topk", k.topk, {"X": "*fp32", "Out": "*fp32"}, dict(BLOCK=1024, K=16)))
    cases.append(_case("histogram", k.histogram, {"X": "*i32", "Out": "*i32"}, dict(BLOCK=1024, BINS=64)))
    for dtype in ("fp16", "fp32", "bf16"):
        cases.append(_case(f"descriptors {dtype}", k.descriptors, {"A": f"*{dtype}", "B": f"*{dtype}", "M": "i32",
                                                                  "N": "i32"}, dict(BLOCK_M=64, BLOCK_N=64)))
    cases.append(_case("descriptor 3d", k.descriptor_3d, {"in_desc": "tensordesc<fp16[1, 32, 64]>",
                                                          "out_desc": "tensordesc<fp16[1, 32, 64]>"}, dict(BLOCK=64)))
    cases.append(_case("persistent fp8 ws", k.persistent_dot_ws, {"A": "*fp8e4nv", "B": "*fp8e4nv", "C": "*fp16",
                                                                   "M": "i32", "N": "i32", "K": "i32"},
                       dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, NUM_SMS=132), num_warps=4))
    return cases


CASES = _atomics() + _dots() + _arithmetic() + _conversions() + _structured()


CASE = {case.name: case for case in CASES}
#: Census kernels that call subroutines ptxas writes itself (64-bit division, the slow paths of
#: precise division and square root, trigonometric reduction) or Triton's noinline functions.
CALLING = ["integer division i64", "integer division i16", "float math fp32", "double math", "libdevice fp32",
           "noinline call"]


def compiled(name: str):
    """Triton's CompiledKernel of census case `name` (Triton's cache keeps it across runs)."""
    return sass_cubins.compiled(CASE[name])


@functools.lru_cache(maxsize=None)
def decoded(name: str) -> tuple[str, list]:
    """(kernel, instructions) of census case `name`'s cubin, decoded once per process."""
    ((kernel, instructions),) = disassemble(compiled(name).asm["cubin"]).items()
    return kernel, instructions


def other_cubins() -> dict[str, bytes]:
    """The census's other cubins: the corpus and examples (here and as the H200 built them) and
    the analysis tests' PTX kernels."""
    cubins = dict(sass_cubins.cubins())
    cubins.update({f"h200 {name}": cubin for name, cubin in sass_cubins.h200_cubins().items()})
    cubins["wide forms (PTX)"] = sass_ptx_kernels.cubin(sass_ptx_kernels.WIDE_FORMS)
    cubins["calls (PTX)"] = sass_ptx_kernels.cubin(sass_ptx_kernels.CALLS)
    cubins["more forms (PTX)"] = sass_ptx_kernels.cubin(sass_ptx_kernels.MORE_FORMS)
    return cubins


def instructions() -> dict[str, list]:
    """Cubin name -> the instructions of its kernels, for every cubin of the census."""
    found = {name: [i for listing in disassemble(cubin).values() for i in listing]
             for name, cubin in other_cubins().items()}
    found.update({name: decoded(name)[1] for name in CASE})
    return found


def census(listings: dict[str, list]) -> dict[str, dict[str, set[str]]]:
    """Base opcode -> form (the opcode with its modifiers, as printed) -> the cubins it is in."""
    found: dict[str, dict[str, set[str]]] = collections.defaultdict(lambda: collections.defaultdict(set))
    for name, listing in listings.items():
        for instruction in listing:
            found[instruction.base][instruction.opcode].add(name)
    return found


def main():
    listings = instructions()
    found = census(listings)
    print(f"{len(listings)} cubins, {len(found)} base opcodes, {sum(map(len, found.values()))} forms")
    for base in sorted(found):
        forms = found[base]
        print(f"{base} ({len(set().union(*forms.values()))} cubins): " +
              ", ".join(f"{form} {len(names)}" for form, names in sorted(forms.items())))


if __name__ == "__main__":
    main()
