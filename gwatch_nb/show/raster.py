"""The text timeline of ``gwatch show``: one row of characters per warp, one character per
time slice, a letter per scope.

A cell shows the scope covering most of it at the deepest nesting level that still
covers at least half of the busy time there: in capitals when scopes fill at least half
of the time the warp was alive in it, in lower case when they fill less (a short scope
on a lightly loaded warp still shows), idle where no scope runs at all, blank where the
warp was not alive."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace import WARP_KEY
from .context import Context
from .selection import Selection

IDLE, ABSENT = ".", " "
#: Scope symbols beyond letters and digits: none of them is IDLE, ABSENT or the row's "|".
_MORE_SYMBOLS = "#$%&*+=@^~!?<>/\\"
SORT_KEYS = ("active", "bubble")


def scope_letters(names: list[str]) -> dict[str, str]:
    """One distinct capital (or digit, then symbol) per scope: its initial if free, else
    another of its letters, else the first free one."""
    pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" + _MORE_SYMBOLS
    taken: dict[str, str] = {}
    for name in names:
        candidates = [c.upper() for c in str(name) if c.isascii() and c.isalnum()] + list(pool)
        taken[name] = next((c for c in candidates if c not in taken.values()), "?")
    return taken


def timeline(c: Context) -> dict | None:
    if c.launch is None:
        return None
    trace, launch = c.trace, c.launch
    warps = trace.warps
    in_launch = np.flatnonzero(c.selection.warp_mask(warps) & (warps["launch"].to_numpy() == launch))
    shown = _pick_rows(c, warps.iloc[in_launch])
    warps = warps.iloc[shown]
    grid = tuple(trace.launches["grid"].iloc[launch])
    labels = [f"b{block} w{w.warp} sm{w.sm}" for block, w in zip(_block_label(warps, grid), warps.itertuples())]
    columns = max(10, c.width - max([len(label) for label in labels] + [0]) - 5)
    start, end = c.window(launch)
    per_column = (end - start) / columns
    names = list(c.selected["scope"].cat.categories)
    letters = scope_letters(names)
    lane_of_warp = np.full(len(trace.warps), -1, np.int64)
    lane_of_warp[shown] = np.arange(len(shown))
    part = c.selected[c.selected["launch"].to_numpy() == launch]
    lane = lane_of_warp[trace.warp_row[part.index.to_numpy()]]
    part, lane = part[lane >= 0], lane[lane >= 0]
    codes = part["scope"].cat.codes.to_numpy()
    cells = _cells(lane, codes, part["depth"].to_numpy(), part["start_ns"].to_numpy(), part["end_ns"].to_numpy(),
                   warps, len(names), start, per_column, columns)
    capitals = list(letters.values())
    symbols = np.array(capitals + [s.lower() for s in capitals] + [IDLE, ABSENT])
    lines = ["".join(row) for row in symbols[cells]]
    return {
        "launch": launch, "start_ns": start, "end_ns": end, "ns_per_column": per_column, "columns": columns,
        "legend": {letters[names[code]]: str(names[code]) for code in np.unique(codes)},
        "sort_by": c.sort_by,
        "rows": [{"label": label, **{k: int(getattr(w, k)) for k in (*WARP_KEY, "sm")}, "line": line}
                 for label, w, line in zip(labels, warps.itertuples(), lines)],
        "warps_in_selection": int(c.selection.warp_mask(trace.warps).sum()),
    }


def _block_label(frame: pd.DataFrame, grid: tuple[int, int, int]) -> list[str]:
    """Block coordinates with as many axes as the grid uses: '3', '3,1' or '3,1,0'."""
    used = max([1] + [axis + 1 for axis in range(3) if grid[axis] > 1])
    axes = [frame[k].to_numpy() for k in ("block_x", "block_y", "block_z")[:used]]
    return [",".join(map(str, coords)) for coords in zip(*axes)]


def _pick_rows(c: Context, warps: pd.DataFrame) -> np.ndarray:
    """Trace.warps rows of up to ``c.rows`` warps. With ``sort_by``, the first by that key
    (most busy time, most idle time, or most time in a scope), in that order; else those
    of the first block (a block's warps side by side show its pipeline), then warps spread
    evenly over the rest, in block order."""
    order = warps.sort_values(["block_z", "block_y", "block_x", "warp"], kind="stable").index.to_numpy()
    if c.sort_by is not None:
        key = _sort_key(c)[order]
        return order[np.argsort(-key, kind="stable")[:c.rows]]
    if len(order) <= c.rows:
        return order
    blocks = c.trace.warps.loc[order, ["block_x", "block_y", "block_z"]].to_numpy()
    first = np.flatnonzero((blocks == blocks[0]).all(axis=1))[: max(1, c.rows // 2)]
    rest = np.setdiff1d(np.arange(len(order)), first)
    spread = rest[np.unique(np.linspace(0, len(rest) - 1, c.rows - len(first)).round().astype(int))]
    return order[np.concatenate([first, spread])]


def _sort_key(c: Context) -> np.ndarray:
    """Per Trace.warps row, the value --sort-by ranks warps by (largest first)."""
    activity = c.activity.reindex(range(len(c.trace.warps)))
    if c.sort_by == "active":
        return activity["busy_ns"].fillna(-1).to_numpy()
    if c.sort_by == "bubble":
        return activity["idle_ns"].fillna(-1).to_numpy()
    ids = Selection(scopes=[c.sort_by]).scope_ids(c.trace)
    df = c.selected
    of_scope = df[np.isin(df["scope_id"].to_numpy(), ids)]
    rows = c.trace.warp_row[of_scope.index.to_numpy()]
    return np.bincount(rows, of_scope["duration_ns"].to_numpy(), minlength=len(c.trace.warps))


def _coverage(group: np.ndarray, start: np.ndarray, end: np.ndarray, groups: int, columns: int) -> np.ndarray:
    """(groups, columns): the fraction of each column covered by each group's intervals
    (positions in columns units, already clipped to [0, columns])."""
    if not groups:
        return np.zeros((0, columns))
    end = np.maximum(end, start)  # a corrupt record may end before it starts: it covers nothing
    width = columns + 1  # one spare column takes ends that fall exactly on the right edge
    base = group * width
    first, last = np.floor(start).astype(np.int64), np.floor(end).astype(np.int64)
    size = groups * width
    one = first == last
    cover = np.zeros(size)
    cover += np.bincount(base[one] + first[one], end[one] - start[one], size)
    many = ~one
    cover += np.bincount(base[many] + first[many], (first + 1 - start)[many], size)
    cover += np.bincount(base[many] + last[many], (end - last)[many], size)
    # Whole columns strictly between first and last: +1 there, by a running sum.
    steps = np.bincount(base[many] + first[many] + 1, minlength=size) - np.bincount(base[many] + last[many],
                                                                                    minlength=size)
    cover += np.cumsum(steps.reshape(groups, width), axis=1).reshape(-1)
    return cover.reshape(groups, width)[:, :columns]


def _cells(lane, code, depth, start_ns, end_ns, warps, scopes, t0, per_column, columns) -> np.ndarray:
    """(lanes, columns) symbol index per cell: a scope code (0..scopes-1), the same scope
    filling under half the warp's time there (scopes..2*scopes-1), idle, then absent."""
    lanes = len(warps)
    depths = int(depth.max()) + 1 if len(depth) else 1
    a = np.clip((start_ns - t0) / per_column, 0, columns)
    b = np.clip((end_ns - t0) / per_column, 0, columns)
    by_scope = _coverage((lane * depths + depth) * max(scopes, 1) + code, a, b, lanes * depths * max(scopes, 1),
                         columns).reshape(lanes, depths, max(scopes, 1), columns)
    level_cover = by_scope.sum(axis=2)                      # (lanes, depths, columns)
    busy = level_cover.max(axis=1)  # a selection may hold only nested scopes: the widest level counts
    deep_enough = (level_cover >= 0.5 * busy[:, None]) & (busy[:, None] > 0)
    level = depths - 1 - np.argmax(deep_enough[:, ::-1], axis=1)  # deepest qualifying level
    at_level = np.take_along_axis(by_scope, level[:, None, None, :], axis=1)[:, 0]  # (lanes, scopes, columns)
    symbol = np.argmax(at_level, axis=1)
    warp_end = np.where(warps["exited"].to_numpy(), warps["end_ns"].to_numpy(), t0 + per_column * columns)
    alive = _coverage(np.arange(lanes), np.clip((warps["start_ns"].to_numpy() - t0) / per_column, 0, columns),
                      np.clip((warp_end - t0) / per_column, 0, columns), lanes, columns)
    symbol = np.where(busy < 0.5 * alive, symbol + scopes, symbol)
    symbol = np.where(busy <= 0, 2 * scopes, symbol)
    return np.where((alive <= 0) & (busy <= 0), 2 * scopes + 1, symbol)
