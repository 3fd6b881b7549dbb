"""Where a traced launch's host time goes: the launch callback's total per launch, and each
driver call it makes (timed by wrapping gwatch_nb.cuda.driver's functions), beside an untraced
launch's host time, on one small kernel traced many times.

  python bench/launch_host.py [--launches 200] [--tier sass] [--blocks 4]
"""
from __future__ import annotations

import argparse
import collections
import functools
import statistics
import time

import torch
import triton
import triton.language as tl

from gwatch_nb import tiers
from gwatch_nb.triton import scope_end, scope_start
from gwatch_nb.cuda import driver
from gwatch_nb.options import TraceOptions


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    scope_start(1)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)
    scope_end(1)


def _timed_driver() -> dict[str, list[float]]:
    """Wrap every public function of the driver module with a timer; their µs per call."""
    spent = collections.defaultdict(list)
    for name in [n for n, f in vars(driver).items() if callable(f) and not n.startswith("_")
                 and getattr(f, "__module__", "") == driver.__name__ and not isinstance(f, type)]:
        original = getattr(driver, name)

        @functools.wraps(original)
        def timed(*args, _original=original, _name=name, **kwargs):
            began = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_name].append((time.perf_counter() - began) * 1e6)
        setattr(driver, name, timed)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--tier", default="sass")
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    block = 1024
    n = args.blocks * block
    x, y, out = (torch.rand(n, device="cuda") for _ in range(3))

    def launch():
        add_kernel[(args.blocks,)](x, y, out, n, BLOCK=block)

    launch()
    torch.cuda.synchronize()
    untraced = []
    for _ in range(args.launches):
        began = time.perf_counter()
        launch()
        untraced.append((time.perf_counter() - began) * 1e6)
    torch.cuda.synchronize()
    session = tiers.open_session(TraceOptions("add_kernel", args.tier))
    session.start()
    launch()  # instruments it
    spent = _timed_driver()
    traced = []
    try:
        for _ in range(args.launches):
            began = time.perf_counter()
            launch()
            traced.append((time.perf_counter() - began) * 1e6)
        torch.cuda.synchronize()
        collected = time.perf_counter()
    finally:
        session.stop()
    stop_ms = (time.perf_counter() - collected) * 1e3
    callbacks = [r.info["host_callback_us"] for r in session.records()[1:]]
    print(f"{args.tier} tier, {args.blocks} blocks, {args.launches} launches")
    print(f"untraced launch on the host: median {statistics.median(untraced):.1f} µs")
    print(f"traced launch on the host:   median {statistics.median(traced):.1f} µs "
          f"(its callbacks {statistics.median(callbacks):.1f} µs)")
    print(f"stop (collect {len(callbacks) + 1} launches): {stop_ms:.1f} ms")
    for name, times in sorted(spent.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {name:28} {len(times):6} calls, median {statistics.median(times):8.1f} µs, "
              f"total {sum(times) / 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
