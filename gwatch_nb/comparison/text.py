"""A comparison as text for a terminal (``gwatch diff``, ``repr(cmp)``), from ``Comparison.to_dict``."""
from __future__ import annotations

from ..units import format_ns
from .tables import no_stall_change

#: Iteration and role rows printed per scope at most (the JSON holds them all).
MAX_DETAIL_ROWS = 8


def _change(row: dict) -> str:
    if row.get("change") is None:
        return ""
    if row.get("ci_low") is None:
        return f"{row['change']:+.1%} (no interval)"
    mark = " *" if row.get("verdict") else ""
    return f"{row['change']:+.1%} [{row['ci_low']:+.1%}, {row['ci_high']:+.1%}]{mark}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]
    line = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(header)] + [line(r) for r in rows]


def _value(measure: str, value) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if measure == "idle_share" else format_ns(value)


def format_text(summary: dict) -> str:
    labels = summary["labels"]
    out = [f"comparison of {len(labels)} runs: " + " vs ".join(labels) + f" (baseline {labels[0]})",
           f"change: mean of run / mean of {labels[0]} - 1, {summary['level']:.0%} interval by "
           f"{summary['interval']}, {summary['resamples']} resamples, seed {summary['seed']}; * = interval excludes 0"]
    if summary["notes"]:
        out += ["", "not compared / differences in shape:"] + [f"  - {n}" for n in summary["notes"]]
    out += ["", "verdicts:"] + ([f"  {v}" for v in summary["verdicts"]] or ["  no change whose interval excludes 0"])
    if summary.get("stalls"):
        out += ["", "why (stall reasons whose share of a scope's PC samples moved most):"] + (
            [f"  {c}" for c in summary["stall_changes"]] or ["  " + no_stall_change(summary["stall_change_points"])])
    rows = [[r["scope"], r["run"], f"{r['count']:,}", format_ns(r["p50_ns"]), format_ns(r["p95_ns"]),
             format_ns(r["mean_ns"]), format_ns(r["total_ns"]),
             "-" if r["share"] is None else f"{r['share']:.1%}", _change(r)] for r in summary["scopes"]]
    out += ["", "per scope:"] + _table(["scope", "run", "count", "p50", "p95", "mean", "total", "share",
                                        "change of mean [CI]"], rows)
    rows = [[r["what"], r["run"], _value(r["measure"], r["value"]), f"{r['samples']:,} {r['samples_of']}",
             _change(r)] for r in summary["kernel"]]
    out += ["", "kernel:"] + _table(["measure", "run", "value", "samples", "change [CI]"], rows)
    for key, title in (("roles", "role"), ("iterations", "seq")):
        changed = [r for r in summary[key] if r.get("verdict")]
        compared = sum(1 for r in summary[key] if r.get("change") is not None)
        out += ["", f"per {'warp role (warp index in block)' if key == 'roles' else 'iteration (seq)'}: "
                    f"{compared} compared, {len(changed)} with an interval excluding 0"]
        shown = sorted(changed, key=lambda r: -abs(r["change"]))[:MAX_DETAIL_ROWS]
        rows = [[r["scope"], r["run"], str(r[title]), format_ns(r["mean_ns"]), _change(r)] for r in shown]
        if rows:
            out += _table(["scope", "run", title, "mean", "change [CI]"], rows)
    return "\n".join(out) + "\n"
