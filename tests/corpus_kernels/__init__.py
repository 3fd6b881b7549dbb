"""Realistic Triton kernels with gwatch markers, one module per kernel family.

Each family module holds the kernels, their scope names, a host launcher and workload
functions (device -> Workload): inputs built on the device, the launch, a torch
reference of what it must produce and, where the loops' trip counts are known, how
many events every warp records. example_workloads gives the same for examples/."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Workload:
    """One realistic run of a corpus kernel on a GPU."""
    launch: Callable[[], tuple]  # runs the kernel(s) and returns their outputs
    reference: tuple             # the same outputs computed by torch in float32/float64
    atol: float
    rtol: float
    # Events each warp of the traced kernel records, one per row of Trace.warps (None: not fixed).
    events_per_warp: Callable[["pd.DataFrame"], np.ndarray] | None = None


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
