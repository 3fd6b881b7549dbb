"""Running rewritten cubins in place of Triton's own, for the SASS tier's GPU checks
(tests/test_sass_gpu.py, tests/sass_sanitizer_check.py): the workloads (every corpus case that
has one, and the examples the corpus does not already cover) and the swap
of a CompiledKernel's function for the same kernel loaded from a rewritten cubin. Triton's
launcher passes `kernel.function` at every launch (triton/runtime/jit.py, 3.6 and 3.9), so
setting it is the whole swap; the original module stays loaded and is put back afterwards."""
import contextlib
from dataclasses import dataclass
from typing import Callable

import torch

import corpus
from examples import softmax as softmax_example
from corpus_kernels import Workload, example_workloads
from gwatch_nb import triton_compat
from gwatch_nb.cuda import driver


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
    gwatch_nb.sources finds them (a weak proxy on the heap makes isinstance() raise)."""
    from triton import knobs
    handles = set()

    def hook(metadata):
        handles.add(int(metadata.data["function"]))
    chain = knobs.runtime.launch_enter_hook  # a HookChain in Triton 3.9, a plain callable slot in older ones
    if hasattr(chain, "add"):
        chain.add(hook)
    else:
        knobs.runtime.launch_enter_hook = hook
    try:
        result = launch()
        torch.cuda.synchronize()
    finally:
        if hasattr(chain, "add"):
            chain.remove(hook)
        else:
            knobs.runtime.launch_enter_hook = chain
    kernels = [obj for obj, handle, *_ in triton_compat.compiled_kernels()
               if handle in handles and getattr(getattr(obj, "src", None), "fn", None) is fn]
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
