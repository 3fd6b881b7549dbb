"""Kernel times for the benchmarks: what the GPU itself says each kernel took (CUPTI's activity
records, gwatch_nb/cuda/activity.py), the same clock the trace session times traced launches by."""
import re


def kernel_times(run, pattern: str) -> list[float]:
    """µs on the GPU of each launch of a kernel whose name matches `pattern` (re.search) that
    `run()` makes, in the order they began."""
    import torch
    from gwatch_nb.cuda import activity
    clock = activity.clock()
    clock.start(every_kernel=True)
    try:
        run()
        torch.cuda.synchronize()
        clock.flush()
        return [ms * 1e3 for name, ms in clock.take_all() if re.search(pattern, name)]
    finally:
        clock.stop(every_kernel=True)
