"""Compile the corpus's kernels for sm_90a on a machine without a GPU, through the launches
the cases themselves make: Triton asks its driver only for the target, the device and the
stream before it compiles, so a stand-in that answers those, and launches turned into
warmups, give the very cubins a launch would build (the H200 builds them with its own
Triton, so its cubins are captured there too: run_corpus.py)."""
from __future__ import annotations

import contextlib
import re

import torch
from triton.backends.compiler import GPUTarget
from triton.runtime import driver
from triton.runtime.jit import JITFunction

TARGET = GPUTarget("cuda", 90, 32)


class _CompileOnlyDriver:
    def get_current_target(self):
        return TARGET

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        return torch.device("cpu")

    def is_active(self):
        return True


@contextlib.contextmanager
def compiling():
    """Within it, every Triton launch compiles for sm_90a and runs nothing; yields the list
    of (jit function, CompiledKernel) the launches built, in launch order."""
    built = []
    run, previous = JITFunction.run, driver._active

    def compile_only(self, *args, grid, warmup, **kwargs):
        kernel = run(self, *args, grid=grid, warmup=True, **kwargs)
        built.append((self, kernel))
        return kernel

    driver.set_active(_CompileOnlyDriver())
    JITFunction.run = compile_only
    try:
        yield built
    finally:
        JITFunction.run = run
        driver._active = previous  # reset_active() would look for a GPU


def compile_case(case) -> list:
    """(jit function, CompiledKernel) of each distinct kernel the case launches that its pattern names."""
    with compiling() as built:
        case.launcher("cpu")()
    seen, matched = set(), []
    for fn, kernel in built:
        if re.search(case.pattern, kernel.name) and kernel.hash not in seen:
            seen.add(kernel.hash)
            matched.append((fn, kernel))
    return matched
