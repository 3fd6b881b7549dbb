"""Summaries of a trace, shared by the charts, the HTML report and ``gwatch show``.

All of them aggregate with pandas/numpy over whole columns, so they stay fast on traces
of millions of scope instances. Times are ns on each launch's own axis."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .trace import Trace

STAT_COLUMNS = ["count", "min_ns", "p50_ns", "mean_ns", "p95_ns", "max_ns", "total_ns"]


def scope_stats(df: pd.DataFrame) -> pd.DataFrame:
    """Per kernel and scope: count, min, p50, mean, p95, max and total duration (ns)."""
    if df.empty:
        return pd.DataFrame(columns=["kernel", "scope", "scope_id", *STAT_COLUMNS])
    grouped = df.groupby(["kernel", "scope_id"], observed=True)["duration_ns"]
    out = pd.DataFrame({
        "count": grouped.size(), "min_ns": grouped.min(), "p50_ns": grouped.median(), "mean_ns": grouped.mean(),
        "p95_ns": grouped.quantile(0.95), "max_ns": grouped.max(), "total_ns": grouped.sum(),
    }).reset_index()
    names = df.drop_duplicates("scope_id").set_index("scope_id")["scope"].astype(str)
    out.insert(1, "scope", out["scope_id"].map(names))
    return out.sort_values(["kernel", "total_ns"], ascending=[True, False], ignore_index=True)


@dataclass
class BusyTime:
    """How chosen scope instances fill their warps' time, instance by instance (in Trace.df
    order, clipped to a window): ``row`` the instance's df row, ``warp_row`` its warp's row
    in Trace.warps, ``adds`` the ns it adds to its warp's busy time (the union of the chosen
    instances, so nested or overlapping ones count once), ``gap`` the idle ns since the
    warp's earlier chosen instances all ended (0 for the first), ``after`` the df row of
    the instance that ended last before that gap (-1 for none)."""
    row: np.ndarray
    warp_row: np.ndarray
    adds: np.ndarray
    gap: np.ndarray
    after: np.ndarray


def busy_time(trace: Trace, rows: np.ndarray | None = None, start_ns: int | None = None,
              end_ns: int | None = None) -> BusyTime:
    """The busy union of ``rows`` of Trace.df (all when None) in [start_ns, end_ns)."""
    df = trace.df
    row = np.arange(len(df)) if rows is None else np.asarray(rows, np.int64)
    warp = trace.warp_row[row]
    start, end = df["start_ns"].to_numpy()[row], df["end_ns"].to_numpy()[row]
    if start_ns is not None or end_ns is not None:
        lo = np.iinfo(np.int64).min if start_ns is None else start_ns
        hi = np.iinfo(np.int64).max if end_ns is None else end_ns
        start, end = np.clip(start, lo, hi), np.clip(end, lo, hi)
    inside = end > start
    row, warp, start, end = row[inside], warp[inside], start[inside], end[inside]
    if len(row) and (np.any(np.diff(warp) < 0) or np.any((np.diff(start) < 0) & (np.diff(warp) == 0))):
        order = np.lexsort((start, warp))  # a warp's instances are in start order already: this is a guard
        row, warp, start, end = row[order], warp[order], start[order], end[order]
    # Per warp, the latest end so far: one running maximum over warps laid end to end.
    origin = int(start.min()) if len(row) else 0
    span = int(end.max()) - origin + 1 if len(row) else 1
    shifted = end - origin + warp * span
    latest = np.maximum.accumulate(shifted)
    setter = np.maximum.accumulate(np.where(shifted == latest, np.arange(len(row)), 0))
    first = np.ones(len(row), bool)
    first[1:] = warp[1:] != warp[:-1]
    before = np.empty(len(row), np.int64)
    before[1:] = latest[:-1] - warp[1:] * span + origin
    before[first] = start[first]
    adds = end - np.maximum(start, before)
    np.maximum(adds, 0, out=adds)
    gap = np.where(first, 0, np.maximum(start - before, 0))
    after = np.full(len(row), -1, np.int64)
    after[1:] = row[setter[:-1]]
    after[first] = -1
    return BusyTime(row, warp, adds, gap, after)


def warp_activity(trace: Trace, rows: np.ndarray | None = None, start_ns: int | None = None,
                  end_ns: int | None = None) -> pd.DataFrame:
    """Per warp: lifetime, time inside the chosen scope instances (busy: all of them when
    ``rows`` is None, counting overlaps once), the rest (idle) and the busy share, all
    within [start_ns, end_ns) when a window is given."""
    return activity_of(trace, busy_time(trace, rows, start_ns, end_ns), start_ns, end_ns)


def activity_of(trace: Trace, busy: BusyTime, start_ns: int | None = None, end_ns: int | None = None) -> pd.DataFrame:
    """warp_activity from a BusyTime already computed for the same window."""
    warps = trace.warps
    out = warps.copy()
    out["busy_ns"] = np.bincount(busy.warp_row, busy.adds, minlength=len(warps)).astype(np.int64)
    lo = np.iinfo(np.int64).min if start_ns is None else start_ns
    hi = np.iinfo(np.int64).max if end_ns is None else end_ns
    alive = np.minimum(out["end_ns"].to_numpy(), hi) - np.maximum(out["start_ns"].to_numpy(), lo)
    out["lifetime_ns"] = np.where(out["exited"].to_numpy(), np.maximum(alive, 0), 0).astype(np.int64)
    out["idle_ns"] = (out["lifetime_ns"] - out["busy_ns"]).clip(lower=0)
    out["busy_share"] = np.where(out["lifetime_ns"] > 0, out["busy_ns"] / out["lifetime_ns"].replace(0, 1), 0.0)
    return out


def concurrency(df: pd.DataFrame, bins: int = 400, by: str = "scope") -> pd.DataFrame:
    """How many warps are inside each scope (or other grouping column) over time: the
    time-weighted mean count in each of ``bins`` equal slices of each launch."""
    rows = []
    for launch, part in df.groupby("launch", observed=True):
        end = int(part["end_ns"].max())
        edges = np.linspace(0, max(end, 1), bins + 1)
        for key, group in part.groupby(by, observed=True):
            times = np.concatenate([group["start_ns"].to_numpy(), group["end_ns"].to_numpy()])
            steps = np.concatenate([np.ones(len(group)), -np.ones(len(group))])
            order = np.argsort(times, kind="stable")
            times, level = times[order], np.cumsum(steps[order])
            # Area under the step function up to each event, then at each bin edge.
            area = np.concatenate(([0.0], np.cumsum(level[:-1] * np.diff(times))))
            at = np.searchsorted(times, edges, side="right") - 1
            valid = at >= 0
            edge_area = np.zeros(len(edges))
            edge_area[valid] = area[at[valid]] + level[at[valid]] * (edges[valid] - times[at[valid]])
            mean = np.diff(edge_area) / np.diff(edges)
            rows.append(pd.DataFrame({"launch": launch, by: key, "t_ns": edges[:-1], "t_end_ns": edges[1:],
                                      "warps": mean}))
    if not rows:
        return pd.DataFrame(columns=["launch", by, "t_ns", "t_end_ns", "warps"])
    return pd.concat(rows, ignore_index=True)


def outliers(df: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The n slowest scope instances, with how far each is above its scope's median."""
    if df.empty:
        return df.assign(x_median=pd.Series(dtype=float))
    slowest = df.nlargest(n, "duration_ns")
    medians = df.groupby("scope_id", observed=True)["duration_ns"].median()
    ratio = slowest["duration_ns"] / slowest["scope_id"].map(medians).replace(0, np.nan)
    return slowest.assign(x_median=ratio.to_numpy())


def seq_trend(df: pd.DataFrame) -> pd.DataFrame:
    """Median and p95 duration of each scope's nth instance in a warp (loop iteration)."""
    grouped = df.groupby(["scope", "seq"], observed=True)["duration_ns"]
    return pd.DataFrame({"p50_ns": grouped.median(), "p95_ns": grouped.quantile(0.95),
                         "count": grouped.size()}).reset_index()


def sm_activity(df: pd.DataFrame, bins: int = 200) -> pd.DataFrame:
    """Per SM and time slice, how many warps are inside an outermost scope (mean)."""
    top = df[df["depth"] == 0]
    return concurrency(top, bins=bins, by="sm")
