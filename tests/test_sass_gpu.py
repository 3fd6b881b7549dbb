"""Rewritten cubins on the GPU: every corpus kernel with a workload and the examples run plainly,
then with Triton's kernel swapped for its rewrite under each insertion plan (NOPs at every 7th
instruction, at every block start, before every branch, inside every loop); the outputs must be
bit-identical. A control proves the swap takes effect: an EXIT inserted first leaves the output
untouched."""
import contextlib

import pytest

torch = pytest.importorskip("torch")

import sass_swap
from corpus_kernels import basics
from gwatch_nb.sass import rewrite

pytestmark = pytest.mark.gpu


def _run(workload) -> tuple:
    outputs = workload.launch()
    torch.cuda.synchronize()
    return outputs


def _rewritten(kernel, plan) -> bytes:
    cubin = kernel.asm["cubin"]
    return rewrite.rewrite(cubin, kernel.name, plan(rewrite.decoded(cubin)[kernel.name]))


@pytest.mark.parametrize("plan", list(sass_swap.PLANS))
@pytest.mark.parametrize("case", sass_swap.CASES, ids=[case.name for case in sass_swap.CASES])
def test_rewritten_kernel_gives_bit_identical_outputs(case, plan):
    workload = case.workload("cuda")
    plain, kernels = sass_swap.launched_kernels(case.fn, workload.launch)  # also compiles and loads them
    assert kernels, f"no loaded CompiledKernel of {case.fn.__name__}"
    with contextlib.ExitStack() as stack:
        for kernel in kernels:
            stack.enter_context(sass_swap.swapped(kernel, _rewritten(kernel, sass_swap.PLANS[plan])))
        swapped = _run(workload)
    assert len(swapped) == len(plain)
    for got, expected in zip(swapped, plain):
        assert torch.equal(got, expected), f"{case.name}, {plan}: output differs"


def test_the_swap_runs_the_rewritten_kernel():
    n = 4096
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    grid = (n // basics.VECTOR_BLOCK,)
    _, (kernel,) = sass_swap.launched_kernels(
        basics.vector_add, lambda: basics.vector_add[grid](x, y, out, n, BLOCK=basics.VECTOR_BLOCK))
    assert torch.equal(out, x + y)
    cubin = kernel.asm["cubin"]
    instructions = rewrite.decoded(cubin)[kernel.name]
    exit_first = rewrite.rewrite(cubin, kernel.name, {0: [next(i for i in instructions if i.opcode == "EXIT" and i.predicate is None).raw]})
    untouched = torch.full((n,), float("nan"), device="cuda")
    with sass_swap.swapped(kernel, exit_first):
        basics.vector_add[grid](x, y, untouched, n, BLOCK=basics.VECTOR_BLOCK)
        torch.cuda.synchronize()
    assert torch.isnan(untouched).all()
    basics.vector_add[grid](x, y, untouched, n, BLOCK=basics.VECTOR_BLOCK)  # swapped back
    torch.cuda.synchronize()
    assert torch.equal(untouched, x + y)


def test_a_kernel_with_an_appended_parameter_loads_and_runs():
    """with_parameter's cubin launched with one argument more than Triton passes computes the same."""
    import ctypes

    from cuda.bindings import driver as cu
    from gwatch_nb.cuda import driver
    from gwatch_nb.sass.cubin import ID, Cubin

    n = 4096
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    grid = (n // basics.VECTOR_BLOCK,)
    _, (kernel,) = sass_swap.launched_kernels(
        basics.vector_add, lambda: basics.vector_add[grid](x, y, out, n, BLOCK=basics.VECTOR_BLOCK))
    extended, address = Cubin.parse(kernel.asm["cubin"]).with_parameter(kernel.name)
    params = sorted((int.from_bytes(r.payload[4:6], "little"), int.from_bytes(r.payload[6:8], "little"),
                     int.from_bytes(r.payload[8:12], "little") >> 18) for r in Cubin.parse(extended).attributes(kernel.name)
                    if r.id == ID["EIATTR_KPARAM_INFO"])  # (ordinal, offset, size)
    assert params[-1][1] == address - 0x210
    again = torch.full((n,), float("nan"), device="cuda")
    values = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(y.data_ptr()), ctypes.c_uint64(again.data_ptr()),
              ctypes.c_uint32(n)]
    # Triton's scratch pointers (none used by this kernel), then ours
    values += [(ctypes.c_uint64 if size == 8 else ctypes.c_uint32)(0) for _, _, size in params[len(values):]]
    assert len(values) == len(params)
    module = driver.load_cubin(extended)
    try:
        function = driver.get_function(module, kernel.name)
        pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        driver.check(cu.cuLaunchKernel(function, grid[0], 1, 1, kernel.metadata.num_warps * 32, 1, 1,
                                       kernel.metadata.shared, cu.CUstream(0), ctypes.addressof(pointers), 0),
                     "cuLaunchKernel")
        driver.check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    finally:
        driver.check(cu.cuModuleUnload(module), "cuModuleUnload")
    assert torch.equal(again, out)
