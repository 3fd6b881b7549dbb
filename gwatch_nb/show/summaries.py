"""The sections of ``gwatch show`` other than the text timeline, as plain data (times in
ns): header, per-scope statistics, pipeline, concurrency, outliers, the longest instance
of a scope, the longest bubble, where the sass tier's readings landed and why the warps
stalled. Each is computed
over whole columns (pandas/numpy)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import analysis, site_rows
from ..notes import notes
from ..stall_reasons import per_scope
from ..trace import WARP_KEY
from .context import Context
from .selection import Selection, SelectionError

_PLACE = [*WARP_KEY, "sm"]


def header(c: Context) -> dict:
    trace, launches = c.trace, c.trace.launches
    return {
        "tier": trace.meta.get("tier"), "time_source": trace.meta.get("time_source"),
        "scopes_traced": trace.meta.get("scopes_traced"),
        "kernels": sorted(set(launches["kernel"])) if len(launches) else [],
        "launches": launches.to_dict("records"),
        "scopes": [{"scope_id": int(sid), "scope": trace.scope_name(sid)}
                   for sid in sorted(trace.df["scope_id"].unique())],
        "scope_instances": len(trace.df), "selected_instances": len(c.selected),
        "selection": c.selection.describe(), "focus_launch": c.launch,
        "warnings": [str(w) for w in trace.warnings],
        "notes": notes(trace), "overhead": trace.overhead,
    }


def stats(c: Context) -> list[dict]:
    return analysis.scope_stats(c.selected).to_dict("records")


def pipeline(c: Context) -> dict:
    """Busy (inside a selected scope, overlaps counted once) vs idle time of the selected
    warps, within the window; the idlest warps; the longest gaps between selected scopes."""
    activity = c.activity
    exited = activity[activity["exited"]]
    share = exited["busy_share"]
    idlest = exited.nlargest(c.top, "idle_ns")
    return {
        "warps": len(activity), "warps_not_exited": int((~activity["exited"]).sum()),
        "busy_ns": int(exited["busy_ns"].sum()), "idle_ns": int(exited["idle_ns"].sum()),
        "lifetime_ns_mean": float(exited["lifetime_ns"].mean()) if len(exited) else None,
        "busy_share_mean": float(share.mean()) if len(share) else None,
        "busy_share_min": float(share.min()) if len(share) else None,
        "busy_share_p50": float(share.median()) if len(share) else None,
        "idlest": idlest[[*_PLACE, "lifetime_ns", "busy_ns", "idle_ns", "busy_share"]].to_dict("records"),
        "longest_gaps": _gaps(c, c.top),
    }


def _gaps(c: Context, top: int) -> list[dict]:
    """The longest stretches of a warp between selected scope instances (in the window)."""
    busy = c.busy
    candidates = np.flatnonzero(busy.gap > 0)
    best = candidates[np.argsort(-busy.gap[candidates], kind="stable")[:top]]
    df, warps = c.trace.df, c.trace.warps
    out = []
    for i in best:
        # The gap runs from the end of ``ended`` to the start of ``started``.
        warp, started, ended = warps.iloc[busy.warp_row[i]], df.iloc[busy.row[i]], df.iloc[busy.after[i]]
        out.append({**{k: int(warp[k]) for k in _PLACE}, "gap_ns": int(busy.gap[i]),
                    "start_ns": int(max(started["start_ns"], c.selection.start_ns or 0) - busy.gap[i]),
                    "after": str(ended["scope"]), "before": str(started["scope"])})
    return out


def concurrency(c: Context) -> dict | None:
    """How many warps are inside each selected scope over the focus launch's window: the
    exact peak and time-weighted mean, and per-slice means for a sparkline of ``bins``."""
    if c.launch is None:
        return None
    part = c.selected[c.selected["launch"].to_numpy() == c.launch]
    t0, t1 = c.window(c.launch)
    longest_name = max([len(str(n)) for n in c.selected["scope"].cat.categories] + [1])
    bins = max(10, c.width - longest_name - 30)
    edges = np.linspace(t0, t1, bins + 1)
    series = []
    codes, names = part["scope"].cat.codes.to_numpy(), part["scope"].cat.categories
    all_start, all_end = part["start_ns"].to_numpy(), part["end_ns"].to_numpy()
    for code in pd.unique(codes):  # in order of first appearance
        mine = codes == code
        scope = names[code]
        start = np.sort(np.clip(all_start[mine], t0, t1))
        end = np.sort(np.clip(all_end[mine], t0, t1))
        # Warps inside just after each start: starts so far minus ends so far (an end at
        # that same instant has left already).
        peak = int((np.arange(1, len(start) + 1) - np.searchsorted(end, start, side="right")).max()) \
            if len(start) else 0
        area = _covered_before(start, edges) - _covered_before(end, edges)  # warp-ns inside, up to each edge
        values = np.diff(area) / np.diff(edges)
        series.append({"scope": str(scope), "peak": max(peak, 0), "mean": float(area[-1] / (t1 - t0)),
                       "values": np.round(values, 2).tolist()})
    return {"launch": c.launch, "start_ns": t0, "end_ns": t1, "bins": bins, "series": series}


def _covered_before(times: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """For each edge, the sum over sorted ``times`` before it of (edge - time)."""
    before = np.searchsorted(times, edges, side="left")
    prefix = np.concatenate(([0.0], np.cumsum(times, dtype=np.float64)))
    return before * edges - prefix[before]


def outliers(c: Context) -> list[dict]:
    slowest = analysis.outliers(c.selected, c.top)
    records = slowest[["scope", "scope_id", "duration_ns", "x_median", *_PLACE, "seq", "start_ns"]].to_dict("records")
    for record in records:
        record["scope"] = str(record["scope"])
    return records


def longest(c: Context) -> list[dict]:
    """For each scope named by --longest, its longest selected instance, with how it ranks."""
    out = []
    selected = c.selected
    for name in c.longest:
        ids = Selection(scopes=[name]).scope_ids(c.trace)
        of_scope = selected[np.isin(selected["scope_id"].to_numpy(), ids)]
        if not len(of_scope):
            raise SelectionError(f"--longest {name}: no instance of {name!r} in the selection")
        durations = of_scope["duration_ns"]
        row = of_scope.loc[durations.idxmax()]
        median = float(durations.median())
        out.append({"scope": str(row["scope"]), "duration_ns": int(row["duration_ns"]),
                    "x_median": float(row["duration_ns"] / median) if median else None,
                    "median_ns": median, "instances": len(of_scope),
                    **{k: int(row[k]) for k in _PLACE}, "seq": int(row["seq"]), "start_ns": int(row["start_ns"]),
                    "end_ns": int(row["end_ns"])})
    return out


def longest_bubble(c: Context) -> dict | None:
    """The single longest gap between selected scopes on any selected warp (G-Watch's bubble)."""
    gaps = _gaps(c, 1)
    return gaps[0] if gaps else None


def sites(c: Context) -> dict:
    """Per scope of the selection (and of the chosen launch's kernel), its readings on the
    sass tier: where each landed in the compiled kernel and how sharp its pair's boundary is
    (site_rows.py). No scopes on the other tiers: they read no sites."""
    trace = c.trace
    rows = site_rows.records(trace)
    if c.selection.scopes:
        ids = set(c.selection.scope_ids(trace))
        rows = [r for r in rows if r["scope_id"] in ids]
    if c.selection.launch is not None:
        kernel = str(trace.launches["kernel"].iloc[c.selection.launch])
        rows = [r for r in rows if r["kernel"] == kernel]
    return {"tier": trace.meta["tier"], "rule": site_rows.SHARPNESS_RULE, "scopes": site_rows.by_scope(rows)}


def stalls(c: Context) -> dict:
    """Per scope of the selection (and of the chosen launch's kernel), its PC samples and the
    share of each stall reason (stall_reasons.py); the sampling period and CUPTI's counts."""
    trace = c.trace
    table = trace.stalls
    if c.selection.scopes:
        ids = set(c.selection.scope_ids(trace))
        table = table[table["scope"].isin(ids) | (table["scope"] < 0)]
    if c.selection.launch is not None:
        table = table[table["kernel"] == str(trace.launches["kernel"].iloc[c.selection.launch])]
    sampled = trace.meta.get("stalls") or {}
    return {"sampled": bool(sampled), "period": sampled.get("period"), "chosen": sampled.get("chosen"),
            "kernels": sampled.get("kernels", {}), "scopes": per_scope(table)}


def plain(value):
    """JSON-ready: numpy scalars to Python, NaN to None, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
