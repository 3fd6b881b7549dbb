"""A large trace made from a real one, for front-end performance work.

``tile(trace, copies)`` repeats every warp of each launch ``copies`` times as extra blocks
(block_y shifted past the grid), each copy starting where the previous one ended, like
successive waves of a bigger grid. attention_4k_h200.json (262,144 scope instances)
tiled 8 times gives 2,097,152 instances in one launch."""
from __future__ import annotations

import numpy as np

from gwatch_nb.records import LaunchRecords
from gwatch_nb.trace import Trace


def _tile_launch(records: LaunchRecords, copies: int) -> LaunchRecords:
    w = records.warps
    span_ns = int(w["gt_exit"].max() - w["gt_entry"].min())
    # Each SM counts its own cycles: shift them all by the same time at the typical clock rate.
    rate = np.median((w["ck_exit"] - w["ck_entry"]) / np.maximum(w["gt_exit"] - w["gt_entry"], 1))
    span_cycles = int(round(span_ns * rate))
    parts, cycles = [], []
    for k in range(copies):
        copy = w.copy()
        copy["block_y"] += k * records.grid[1]
        copy["gt_entry"] += k * span_ns
        copy["gt_exit"] += k * span_ns
        copy["ck_entry"] += k * span_cycles
        copy["ck_exit"] += k * span_cycles
        parts.append(copy)
        cycles.append(records.cycles + k * span_cycles)
    gx, gy, gz = records.grid
    return LaunchRecords(records.kernel, (gx, gy * copies, gz), records.block, records.capacity,
                         np.concatenate(parts), np.concatenate(cycles), np.tile(records.tags, copies),
                         dict(records.info))


def tile(trace: Trace, copies: int) -> Trace:
    """The trace with every launch's warps repeated ``copies`` times, one wave after another."""
    if copies < 1:
        raise ValueError(f"copies must be at least 1, got {copies}")
    return Trace([_tile_launch(r, copies) for r in trace.records], trace.scope_names,
                 {k: v for k, v in trace.meta.items() if k != "time_source"})
