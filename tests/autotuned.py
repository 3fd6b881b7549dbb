"""An autotuned kernel with markers, for the autotune tests of both tiers.

On the GPU the autotuner benchmarks with Triton's own ``do_bench``. The interpreter
has no GPU benchmarker; there ``host_bench`` times each config on the host as
``do_bench`` would on the GPU (several runs, quantiles of their times)."""
import os
import time

import numpy as np
import torch
import triton
import triton.language as tl

from gwatch_nb.triton import scope_end, scope_start

SCOPES = {1: "load", 2: "store"}
CONFIGS = [triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 32}, num_warps=2),
           triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2)]
BENCH_RUNS = 3


def host_bench(fn, quantiles):
    times = []
    for _ in range(BENCH_RUNS):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1e3)
    return [float(q) for q in np.quantile(times, quantiles)]


@triton.autotune(configs=CONFIGS, key=["n"],
                 do_bench=host_bench if os.environ.get("TRITON_INTERPRET") == "1" else None)
@triton.jit
def add_one(x, y, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    scope_start(1)
    value = tl.load(x + offsets, mask=offsets < n)
    scope_end(1)
    scope_start(2)
    tl.store(y + offsets, value * SCALE + 1, mask=offsets < n)
    scope_end(2)


def run(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    add_one[lambda meta: (triton.cdiv(len(x), meta["BLOCK"]),)](x, y, len(x), SCALE=2)
    return y
