"""What every section of ``gwatch show`` is computed from: the trace, the selection, the
selected instances, the launch the per-launch sections focus on, and the layout asked for."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..analysis import BusyTime, activity_of, busy_time
from ..trace import Trace
from .selection import Selection


@dataclass
class Context:
    trace: Trace
    selection: Selection
    width: int = 100          # characters a line may take
    rows: int = 8             # warps in the timeline
    top: int = 5              # rows of the ranked tables
    sort_by: str | None = None  # timeline order: "active", "bubble" or a scope
    longest: list[str] = field(default_factory=list)  # scopes whose longest instance to show

    @functools.cached_property
    def selected(self) -> pd.DataFrame:
        """The selected instances (index: their Trace.df rows)."""
        return self.selection.instances(self.trace)

    @functools.cached_property
    def selected_rows(self) -> np.ndarray:
        return self.selected.index.to_numpy()

    @functools.cached_property
    def launch(self) -> int | None:
        """The launch the timeline and concurrency show: the chosen one, else the first with
        selected instances, else the first with selected warps (None when there is none)."""
        if self.selection.launch is not None:
            return self.selection.launch
        if len(self.selected):
            return int(self.selected["launch"].iloc[0])
        warps = self.trace.warps
        chosen = warps["launch"].to_numpy()[self.selection.warp_mask(warps)]
        return int(chosen[0]) if len(chosen) else None

    def window(self, launch: int) -> tuple[int, int]:
        """The shown time range of a launch: the selection's window, else the launch's whole
        span (its warps' lifetimes and its instances)."""
        part = self.selected[self.selected["launch"].to_numpy() == launch]
        span = max(int(self.trace.launches["duration_ns"].iloc[launch]),
                   int(part["end_ns"].max()) if len(part) else 0, 1)
        start = max(0, self.selection.start_ns or 0)
        end = self.selection.end_ns if self.selection.end_ns is not None else span
        return start, max(end, start + 1)

    @functools.cached_property
    def busy(self) -> BusyTime:
        """How the selected instances fill their warps' time within the window."""
        return busy_time(self.trace, self.selected_rows, self.selection.start_ns, self.selection.end_ns)

    @functools.cached_property
    def activity(self) -> pd.DataFrame:
        """Per selected warp: busy (inside a selected scope) and idle time within the window."""
        activity = activity_of(self.trace, self.busy, self.selection.start_ns, self.selection.end_ns)
        return activity[self.selection.warp_mask(activity)]
