"""Summaries of a trace, shared by the charts, the HTML report and ``gwatch show``.

All of them aggregate with pandas/numpy over whole columns, so they stay fast on traces
of millions of scope instances. Times are ns on each launch's own axis."""
from __future__ import annotations

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


def warp_activity(trace: Trace) -> pd.DataFrame:
    """Per warp: lifetime, time inside outermost scopes (busy), the rest (idle), busy share."""
    warps = trace.warps
    keys = ["launch", "block_x", "block_y", "block_z", "warp"]
    df = trace.df
    top = df[df["depth"] == 0]
    busy = top.groupby(keys, observed=True)["duration_ns"].sum().rename("busy_ns")
    out = warps.merge(busy, how="left", left_on=keys, right_index=True)
    out["busy_ns"] = out["busy_ns"].fillna(0).astype(np.int64)
    lifetime = (out["end_ns"] - out["start_ns"]).where(out["exited"], 0)
    out["lifetime_ns"] = lifetime.astype(np.int64)
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
