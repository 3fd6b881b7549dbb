"""What tracing cost: traced launches' kernel times beside untraced ones of the same kernel.

``Trace.overhead`` (``meta["overhead"]``) is either
``{"measured": False, "reason": "..."}`` or ``{"measured": True, "method": "...",
"slowdown_pct": float, "spread_pct": [low, high], "traced_ms": float,
"untraced_ms": float, "traced_launches": int, "untraced_launches": int}``.
Times are each kernel's own time on the GPU (ms), from its start to its end as CUPTI's
activity records give them (cuda/activity.py: nothing the host does around a launch enters
them), grouped by the launched kernel and its configuration (one compiled kernel);
``slowdown_pct`` is the median over traced launches of (traced time / its group's median untraced time) - 1; ``spread_pct`` is
the 25th to 75th percentile of every traced/untraced ratio of a group, so it widens
with either side's noise. Nothing is ever estimated where nothing untraced ran."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

#: How untraced times were obtained.
METHODS = {
    "beside": "untraced launches of the same kernel and configuration made by fn itself, GPU kernel times",
    "replay": "the traced launch replayed untraced (baseline=N), GPU kernel times",
}


def not_measured(reason: str) -> dict:
    return {"measured": False, "reason": reason}


def measure(groups: Mapping[object, tuple[Sequence[float], Sequence[float]]], method: str,
            none_reason: str) -> dict:
    """``groups``: per compiled kernel, (traced ms, untraced ms). Groups lacking either
    side are left out; ``none_reason`` is said when no group has both."""
    ratios, pairs, traced_ms, untraced_ms = [], [], [], []
    for traced, untraced in groups.values():
        traced, untraced = np.asarray(traced, float), np.asarray(untraced, float)
        if not len(traced) or not len(untraced):
            continue
        ratios.append(traced / np.median(untraced))
        pairs.append((traced[:, None] / untraced[None, :]).ravel())
        traced_ms.append(traced)
        untraced_ms.append(untraced)
    if not ratios:
        return not_measured(none_reason)
    ratio, pair = np.concatenate(ratios), np.concatenate(pairs)
    low, high = np.percentile(pair, [25, 75])
    return {"measured": True, "method": METHODS[method],
            "slowdown_pct": round(100 * (float(np.median(ratio)) - 1), 2),
            "spread_pct": [round(100 * (low - 1), 2), round(100 * (high - 1), 2)],
            "traced_ms": round(float(np.median(np.concatenate(traced_ms))), 6),
            "untraced_ms": round(float(np.median(np.concatenate(untraced_ms))), 6),
            "traced_launches": int(len(ratio)), "untraced_launches": int(sum(len(u) for u in untraced_ms))}


def summary(overhead: Mapping | None) -> str:
    """One line for the views' headers."""
    if not overhead:
        return "tracing cost: not measured (this trace predates the measurement)"
    if not overhead["measured"]:
        return f"tracing cost: not measured ({overhead['reason']})"
    low, high = overhead["spread_pct"]
    return (f"tracing cost: {overhead['slowdown_pct']:+.1f}% kernel time (IQR {low:+.1f}% to {high:+.1f}%; "
            f"{overhead['traced_launches']} traced vs {overhead['untraced_launches']} untraced launches, "
            f"{overhead['traced_ms']:.4g} vs {overhead['untraced_ms']:.4g} ms; {overhead['method']})")
