"""Running rewritten cubins in place of Triton's own, for the SASS tier's GPU checks
(tests/test_sass_gpu.py, tests/sass_sanitizer_check.py): the workloads (every corpus case that
has one, and the examples the corpus does not already cover), the insertion plans, and the swap
of a CompiledKernel's function for the same kernel loaded from a rewritten cubin. Triton's
launcher passes `kernel.function` at every launch (triton/runtime/jit.py, 3.6 and 3.9), so
setting it is the whole swap; the original module stays loaded and is put back afterwards."""
import contextlib
import gc
from dataclasses import dataclass
from typing import Callable

import torch

import corpus
import softmax as softmax_example
from corpus_kernels import Workload, example_workloads
from gwatch_nb.cuda import driver
from gwatch_nb.sass import encode

NOP = encode.nop().raw


@dataclass(frozen=True)
class GpuCase:
    name: str
    fn: object  # the JITFunction whose CompiledKernels are swapped
    workload: Callable  # device -> Workload


def _example_softmax(device) -> Workload:
    torch.manual_seed(21)
    x = torch.randn(1000, 4096, device=device, dtype=torch.float16)
    return Workload(lambda: (softmax_example.softmax(x),), (torch.softmax(x.float(), dim=1).half(),), atol=1e-3,
                    rtol=1e-2)


CASES = [GpuCase(c.name, c.fn, c.workload) for c in corpus.CASES if c.workload is not None] + [
    GpuCase("example attention fwd d64 causal", corpus.attention.attn_fwd,
            lambda device: example_workloads.attention_fwd_workload(device, 64, causal=True)),
    GpuCase("example attention fwd d128", corpus.attention.attn_fwd,
            lambda device: example_workloads.attention_fwd_workload(device, 128, causal=False)),
    GpuCase("example softmax", softmax_example.softmax_kernel, _example_softmax),
]


def launched_kernels(fn, launch: Callable) -> tuple[tuple, list]:
    """(launch()'s result, the CompiledKernels of the JITFunction `fn` it launched): Triton's launch
    hook names each launch's function handle; the kernels are found on the heap, as
    gwatch_nb.sources finds them."""
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel
    handles = set()
    previous = knobs.runtime.launch_enter_hook
    knobs.runtime.launch_enter_hook = lambda metadata: handles.add(metadata.data["function"])
    try:
        result = launch()
        torch.cuda.synchronize()
    finally:
        knobs.runtime.launch_enter_hook = previous
    kernels = [obj for obj in gc.get_objects() if isinstance(obj, CompiledKernel)
               and getattr(getattr(obj, "src", None), "fn", None) is fn and getattr(obj, "function", None) in handles]
    return result, kernels


@contextlib.contextmanager
def swapped(kernel, cubin: bytes):
    """Within the block, launches of `kernel` run the same-named kernel of `cubin`."""
    module = driver.load_cubin(cubin)
    function = driver.get_function(module, kernel.name)
    driver.copy_attributes(kernel.function, function)  # e.g. dynamic shared memory above 48 KiB
    original = kernel.function
    kernel.function = int(function)
    try:
        yield
    finally:
        kernel.function = original
        torch.cuda.synchronize()
        from cuda.bindings import driver as cu
        driver.check(cu.cuModuleUnload(module), "cuModuleUnload")


# --- insertion plans: index -> instructions placed before it --------------------------------------

def every_seventh(instructions) -> dict:
    return {i: [NOP] for i in range(0, len(instructions), 7)}


def block_starts(instructions) -> dict:
    starts = {0} | {ins.target for ins in instructions if ins.target is not None}
    starts |= {ins.index + 1 for ins in instructions if ins.target is not None and ins.index + 1 < len(instructions)}
    return {i: [NOP] for i in sorted(starts)}


def before_branches(instructions) -> dict:
    return {ins.index: [NOP] for ins in instructions if ins.target is not None}


def inside_loops(instructions) -> dict:
    """Two NOPs in the middle of every loop body and one before each loop's back edge."""
    plan = {}
    for ins in instructions:
        if ins.target is not None and ins.target <= ins.index and ins.base == "BRA":
            plan.setdefault((ins.target + ins.index) // 2, []).extend([NOP, NOP])
            plan.setdefault(ins.index, []).append(NOP)
    return plan


PLANS = {"every 7th": every_seventh, "block starts": block_starts, "before branches": before_branches,
         "inside loops": inside_loops}
