"""Census kernels with the forms the sass tier used to refuse, traced on the GPU with the
readings spliced into their compiled code: ptxas's own subroutine calls (64-bit division, the
slow paths of precise division and square root), a noinline function, fp8 warpgroup MMA
(QGMMA), REDUX, VIMNMX3, CGAERRBAR, the emulated fp16 atomics' register map and a sort's
unused-load attribute. Outputs are bit-identical with the untraced run and the census scope
has its readings."""
import warnings

import pytest

torch = pytest.importorskip("torch")

import census_kernels as k
import triton
import triton.language as tl
from gwatch_nb import GwatchWarning, do_trace

pytestmark = pytest.mark.gpu

N, BLOCK = 1000, 256


def _ints(dtype, low, high, n=N):
    return torch.randint(low, high, (n,), device="cuda", dtype=dtype)


def _floats(n=N):
    x = torch.randn(n, device="cuda") * 4
    x[::17] = 1e-38  # the slow paths of division and square root
    x[::29] = 3e38
    return x


def _elementwise(fn, inputs, out_dtype, **constexprs):
    """fn(*inputs, Out, N) over one BLOCK per program."""
    def launch():
        out = torch.zeros(N, device="cuda", dtype=out_dtype)
        fn[(triton.cdiv(N, BLOCK),)](*inputs, out, N, BLOCK=BLOCK, **constexprs)
        return [out]
    return launch


def _atomics(dtype, values):
    x = values.to(dtype)

    def launch():
        out = torch.zeros(8, device="cuda", dtype=dtype)
        k.atomics[(triton.cdiv(N, BLOCK),)](x.clone(), out, out, N, BLOCK=BLOCK, OP="add", SEM="acq_rel",
                                           SCOPE="gpu")
        return [out]  # the old values each atomic returns depend on the order: not compared
    return launch


def _dot_fp8():
    a = (torch.randn(128, 128, device="cuda") / 4).to(torch.float8_e4m3fn)
    b = (torch.randn(128, 128, device="cuda") / 4).to(torch.float8_e4m3fn)

    def launch():
        c = torch.zeros(128, 128, device="cuda", dtype=torch.float16)
        k.dot[(1,)](a, b, c, 128, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, PRECISION="ieee", ACC=tl.float32)
        return [c]
    return launch


def _reductions():
    x = _ints(torch.int32, -1000, 1000, BLOCK)

    def launch():
        out = torch.zeros(8, device="cuda", dtype=torch.int32)
        k.reductions[(1,)](x, out, BLOCK=BLOCK, INTEGER=True)
        return [out]
    return launch


def _sort_scan():
    x = torch.randn(BLOCK, device="cuda")
    index = _ints(torch.int32, 0, BLOCK, BLOCK)

    def launch():
        out = torch.zeros(BLOCK, device="cuda")
        k.sort_scan[(1,)](x, out, index, BLOCK=BLOCK)
        return [out]
    return launch


def _noinline():
    x = torch.randn(8, device="cuda")

    def launch():
        out = torch.zeros(8, device="cuda")
        k.noinline_call[(8,)](x, out, 8, num_warps=1)
        return [out]
    return launch


CASES = {
    "integer division i64": lambda: _elementwise(k.integer_division, [_ints(torch.int64, -2**40, 2**40),
                                                                      _ints(torch.int64, 1, 2**33)], torch.int64),
    "integer division i16": lambda: _elementwise(k.integer_division, [_ints(torch.int16, -30000, 30000),
                                                                      _ints(torch.int16, 1, 300)], torch.int16),
    "float math fp32": lambda: _elementwise(k.float_math, [_floats().abs(), _floats()], torch.float32),
    "double math": lambda: _elementwise(k.double_math, [_floats().abs().double(), _floats().double()], torch.float64),
    "noinline call": _noinline,
    "minmax3 i32": lambda: _elementwise(k.minmax3, [_ints(torch.int32, -99, 99) for _ in range(3)], torch.int32),
    "atomic add i32": lambda: _atomics(torch.int32, _ints(torch.int32, -5, 5)),
    "atomic add fp16": lambda: _atomics(torch.float16, _ints(torch.int32, 0, 2)),
    "dot fp8e4nv wgmma": _dot_fp8,
    "reductions i32": _reductions,
    "sort scan fp32": _sort_scan,
}
KERNEL = {"integer division i64": "integer_division", "integer division i16": "integer_division",
          "float math fp32": "float_math", "double math": "double_math", "noinline call": "noinline_call",
          "minmax3 i32": "minmax3", "atomic add i32": "atomics", "atomic add fp16": "atomics",
          "dot fp8e4nv wgmma": "dot", "reductions i32": "reductions", "sort scan fp32": "sort_scan"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_census_kernel_traced_on_the_sass_tier_is_bit_identical(name):
    torch.manual_seed(0)
    launch = CASES[name]()
    plain = launch()  # compile and load first, as a user would have
    torch.cuda.synchronize()
    outputs = {}

    def run():
        outputs["traced"] = launch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GwatchWarning)
        trace = do_trace(run, f"^{KERNEL[name]}$", instrumentation_tier="sass", launches="first")
    torch.cuda.synchronize()
    assert all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(outputs["traced"], plain)), \
        "traced outputs differ from the untraced run"
    assert trace.meta["tier"] == "sass" and not trace.meta.get("problems"), trace.meta.get("problems")
    assert (trace.df.scope_id == k.CENSUS_SCOPE).any()
