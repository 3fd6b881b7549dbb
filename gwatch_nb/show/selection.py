"""What part of a trace ``gwatch show`` looks at: launch, blocks, warps, scopes and a time
window, and the option values that name them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..trace import Trace

_TIME_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_MAX_RANGE = 1 << 16  # warps of a block: far fewer
WARP_SIZE = 32


# ------------------------------------------------------------------ selection

class SelectionError(ValueError):
    """The selection names something the trace does not have."""


@dataclass
class Selection:
    """Which part of a trace to show. Blocks are (x,) (x, y) or (x, y, z) prefixes; scopes
    are names or ids; the window is ns on each launch's own axis."""
    launch: int | None = None
    blocks: list[tuple[int, ...]] = field(default_factory=list)
    warps: list[int] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    start_ns: int | None = None
    end_ns: int | None = None

    def warp_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows of a per-warp or per-instance frame that are in the chosen launch, blocks and warps."""
        keep = np.ones(len(frame), bool)
        if self.launch is not None:
            keep &= frame["launch"].to_numpy() == self.launch
        if self.blocks:
            axes = [frame[k].to_numpy() for k in ("block_x", "block_y", "block_z")]
            in_any = np.zeros(len(frame), bool)
            for block in self.blocks:
                match = np.ones(len(frame), bool)
                for axis, value in zip(axes, block):
                    match &= axis == value
                in_any |= match
            keep &= in_any
        if self.warps:
            keep &= np.isin(frame["warp"].to_numpy(), self.warps)
        return keep

    def mask(self, trace: Trace, with_scopes: bool = True) -> np.ndarray:
        """Which rows of Trace.df are selected (overlapping the window, if one is set)."""
        df = trace.df
        keep = self.warp_mask(df)
        if self.start_ns is not None:
            keep &= df["end_ns"].to_numpy() > self.start_ns
        if self.end_ns is not None:
            keep &= df["start_ns"].to_numpy() < self.end_ns
        if with_scopes and self.scopes:
            keep &= np.isin(df["scope_id"].to_numpy(), self.scope_ids(trace))
        return keep

    def instances(self, trace: Trace, with_scopes: bool = True) -> pd.DataFrame:
        """The selected scope instances; their index is their row in Trace.df."""
        keep = self.mask(trace, with_scopes)
        return trace.df if keep.all() else trace.df[keep]  # no copy of millions of rows when nothing is filtered

    def scope_ids(self, trace: Trace) -> list[int]:
        """The ids the scope filter names; SelectionError naming the known scopes otherwise."""
        by_name: dict[str, list[int]] = {}  # several ids may share a name
        for sid in sorted(trace.df["scope_id"].unique()):
            by_name.setdefault(trace.scope_name(sid), []).append(int(sid))
        ids = []
        for token in self.scopes:
            if token in by_name:
                ids += by_name[token]
            elif token.isdigit() and any(int(token) in group for group in by_name.values()):
                ids.append(int(token))
            else:
                listed = ", ".join(f"{name} ({','.join(map(str, group))})" for name, group in by_name.items())
                raise SelectionError(f"no scope {token!r} in this trace; scopes: {listed or 'none'}")
        return ids

    def check(self, trace: Trace) -> None:
        """SelectionError when the launch, a block, a warp or a scope is not in the trace, or
        the window is empty."""
        launches = len(trace.launches)
        if self.launch is not None and not 0 <= self.launch < launches:
            raise SelectionError(f"no launch {self.launch} in this trace (it has launches 0 to {launches - 1})")
        chosen = trace.launches if self.launch is None else trace.launches.iloc[[self.launch]]
        grids = sorted({tuple(grid) for grid in chosen["grid"]})
        for block in self.blocks:
            if not any(all(b < g for b, g in zip(block, grid)) for grid in grids):
                shapes = "; ".join(f"{_listed(grid)}: blocks {_listed([0] * len(grid))} to "
                                   f"{_listed([g - 1 for g in grid])}" for grid in grids)
                raise SelectionError(f"no block {_listed(block)} in this trace (grid {shapes})")
        threads = sorted({int(np.prod(block)) for block in chosen["block"]})
        most = -(-threads[-1] // WARP_SIZE) if threads else 0
        beyond = [w for w in self.warps if w >= most]
        if beyond:
            sizes = " or ".join(map(str, threads))
            raise SelectionError(f"no warp {_listed(beyond)} in a block of this trace (blocks of {sizes} threads: "
                                 f"warps 0 to {most - 1})")
        if self.start_ns is not None and self.end_ns is not None and self.end_ns <= self.start_ns:
            raise SelectionError("the time window is empty: --to must be later than --from")
        self.scope_ids(trace)

    def describe(self) -> dict:
        return {"launch": self.launch, "blocks": [list(b) for b in self.blocks], "warps": self.warps,
                "scopes": self.scopes, "start_ns": self.start_ns, "end_ns": self.end_ns}


def _listed(numbers) -> str:
    return ",".join(str(n) for n in numbers)


def parse_time(text: str, bare: str = "us") -> int:
    """'12.5us', '800ns', '1.2ms' or a bare number (of µs, or of ``bare``) -> integer ns."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"not a time: {text!r} (write e.g. 12.5us, 800ns, 1.2ms)")
    unit = (match.group(2) or bare).lower()
    return int(round(float(match.group(1)) * _TIME_UNITS[unit]))


def parse_ticks(text: str) -> int:
    """G-Watch's --stime/--etime: timer ticks (1 ns each on the launch's axis); units allowed."""
    return parse_time(text, bare="ns")


def parse_block(text: str) -> tuple[int, ...]:
    """'3', '3,1' or '3,1,0' -> a block prefix."""
    parts = [p for p in re.split(r"[,\s]+", text.strip("() ")) if p]
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a block: {text!r} (write x, x,y or x,y,z)")
    return tuple(int(p) for p in parts)


def parse_numbers(text: str) -> list[int]:
    """'0,2,5-7' -> [0, 2, 5, 6, 7]."""
    numbers = []
    for part in (p for p in text.split(",") if p.strip()):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise ValueError(f"not a number or range: {part!r} (write e.g. 0,2,5-7)")
        lo, hi = int(match.group(1)), int(match.group(2) or match.group(1))
        if hi < lo or hi - lo > _MAX_RANGE:
            raise ValueError(f"range {part.strip()!r} is backwards or longer than {_MAX_RANGE}")
        numbers.extend(range(lo, hi + 1))
    return numbers


def parse_threads(text: str) -> list[int]:
    """G-Watch's --tid: thread ranges of a block, '[0,31], [64,95]' or '0-127' or '5' ->
    the warps holding those threads (records are taken by one lane of each warp)."""
    ranges = re.findall(r"\[\s*(\d+)\s*,\s*(\d+)\s*\]", text)
    rest = re.sub(r"\[\s*\d+\s*,\s*\d+\s*\]", "", text).strip(" ,")
    try:
        singles = parse_numbers(rest) if rest else []
    except ValueError:
        raise ValueError(f"not thread ranges: {text!r} (write e.g. '[0,31], [64,95]' or 0-127)") from None
    warps = {t // WARP_SIZE for t in singles}
    for lo, hi in ((int(a), int(b)) for a, b in ranges):
        if hi < lo or hi - lo > _MAX_RANGE * WARP_SIZE:
            raise ValueError(f"thread range [{lo},{hi}] is backwards or too long")
        warps.update(range(lo // WARP_SIZE, hi // WARP_SIZE + 1))
    if not warps:
        raise ValueError(f"not thread ranges: {text!r} (write e.g. '[0,31], [64,95]' or 0-127)")
    return sorted(warps)
