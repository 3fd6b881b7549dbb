"""Charts of a comparison (altair): the runs' duration distributions overlaid per scope,
their per-iteration trends, and the change of each scope with its interval.

Like ../charts.py, every chart is drawn from aggregates, so its embedded data stays small
whatever the runs' sizes."""
from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from ..analysis import seq_trend
from ..charts import HISTOGRAM_BINS, MAX_CHART_ROWS, WIDTH
from ..palette import run_colour

if TYPE_CHECKING:
    from .tables import Comparison


def _run_colour(cmp: "Comparison") -> alt.Color:
    """One colour per run, the same in every chart (a run keeps its colour when the baseline is left out)."""
    colours = [run_colour(i) for i in range(len(cmp.labels))]
    return alt.Color("run:N", scale=alt.Scale(domain=cmp.labels, range=colours), sort=cmp.labels, title="run")


def distributions(cmp: "Comparison") -> alt.FacetChart:
    """Per scope, each run's histogram of instance durations on shared bins, as a share of
    that run's instances (runs of different sizes stay comparable)."""
    parts = []
    for sid in cmp.scopes:
        durations = [run.df.loc[run.df["scope_id"] == cmp.matches[r][sid], "duration_ns"].to_numpy()
                     for r, run in enumerate(cmp.runs)]
        edges = np.histogram_bin_edges(np.concatenate(durations), bins=HISTOGRAM_BINS)
        for run, values in zip(cmp.runs, durations):
            counts, _ = np.histogram(values, bins=edges)
            parts.append(pd.DataFrame({"scope": cmp.scope_name(sid), "run": run.label, "start_ns": edges[:-1],
                                       "end_ns": edges[1:], "share": counts / max(len(values), 1)}))
    data = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        {"scope": pd.Series(dtype=str), "run": pd.Series(dtype=str), "start_ns": [], "end_ns": [], "share": []})
    names = [cmp.scope_name(s) for s in cmp.scopes]
    base = alt.Chart(data).mark_rect(opacity=0.55).encode(
        x=alt.X("start_ns:Q", title="duration (ns)", scale=alt.Scale(zero=False)), x2="end_ns:Q",
        y=alt.Y("share:Q", title="share of instances", axis=alt.Axis(format="%"), stack=None), y2=alt.datum(0),
        color=_run_colour(cmp),
        tooltip=[alt.Tooltip("scope:N"), alt.Tooltip("run:N"), alt.Tooltip("start_ns:Q", title="from (ns)", format=",.0f"),
                 alt.Tooltip("end_ns:Q", title="to (ns)", format=",.0f"), alt.Tooltip("share:Q", format=".1%")],
    ).properties(width=WIDTH, height=80)
    return base.facet(row=alt.Row("scope:N", sort=names, title=None, header=alt.Header(labelAngle=0, labelAlign="left"))
                      ).resolve_scale(x="independent", y="independent").properties(
        title="Duration of each scope's instances, runs overlaid")


def trends(cmp: "Comparison") -> alt.FacetChart:
    """Per scope, each run's median duration of the nth instance in a warp (loop iteration)."""
    names = {r: {cmp.matches[r][sid]: cmp.scope_name(sid) for sid in cmp.scopes} for r in range(len(cmp.runs))}
    parts = []
    for r, run in enumerate(cmp.runs):
        df = run.df[run.df["scope_id"].isin(list(names[r]))]
        trend = seq_trend(df.assign(scope=df["scope_id"].map(names[r])))
        parts.append(trend.assign(run=run.label))
    data = pd.concat(parts, ignore_index=True)
    stride = int(np.ceil(len(data) / MAX_CHART_ROWS)) if len(data) else 1
    if stride > 1:  # very long loops: every stride-th iteration draws the same line
        data = data[data["seq"] % stride == 0]
    data = data.assign(scope=data["scope"].astype(str))
    title = "Median duration per iteration (nth instance in its warp)"
    if stride > 1:
        title += f", one iteration in {stride}"
    return alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=12)).encode(
        x=alt.X("seq:Q", title="iteration (seq)"), y=alt.Y("p50_ns:Q", title="median duration (ns)"),
        color=_run_colour(cmp),
        tooltip=[alt.Tooltip("scope:N"), alt.Tooltip("run:N"), alt.Tooltip("seq:Q"),
                 alt.Tooltip("p50_ns:Q", title="median (ns)", format=",.0f"), alt.Tooltip("count:Q", format=",")],
    ).properties(width=WIDTH, height=110).facet(
        row=alt.Row("scope:N", sort=[cmp.scope_name(s) for s in cmp.scopes], title=None,
                    header=alt.Header(labelAngle=0, labelAlign="left"))
    ).resolve_scale(y="independent").properties(title=title)


def changes(cmp: "Comparison") -> alt.LayerChart:
    """Each scope's change of mean duration against the baseline, with its interval."""
    rows = cmp.df[cmp.df["run"] != cmp.labels[0]]
    data = rows[["scope", "run", "change", "ci_low", "ci_high"]].assign(significant=rows["verdict"].notna())
    y = alt.Y("scope:N", sort=[cmp.scope_name(s) for s in cmp.scopes], title=None)
    offset = alt.YOffset("run:N", sort=cmp.labels[1:])
    bars = alt.Chart(data).mark_bar(height=8).encode(
        x=alt.X("change:Q", title=f"change of mean duration vs {cmp.labels[0]}", axis=alt.Axis(format="+%")),
        y=y, yOffset=offset, color=_run_colour(cmp), opacity=alt.condition("datum.significant", alt.value(0.9), alt.value(0.35)),
        tooltip=[alt.Tooltip("scope:N"), alt.Tooltip("run:N"), alt.Tooltip("change:Q", format="+.1%"),
                 alt.Tooltip("ci_low:Q", title="CI low", format="+.1%"),
                 alt.Tooltip("ci_high:Q", title="CI high", format="+.1%")])
    whiskers = alt.Chart(data).mark_rule(color="#1f2328").encode(x="ci_low:Q", x2="ci_high:Q", y=y, yOffset=offset)
    zero = alt.Chart(pd.DataFrame({"x": [0]})).mark_rule(color="#6e7781", strokeDash=[3, 3]).encode(x="x:Q")
    return alt.layer(bars, whiskers, zero).properties(
        width=WIDTH, height=max(60, 26 * len(cmp.scopes) * max(len(cmp.labels) - 1, 1)),
        title=f"Change per scope, {cmp.level:.0%} interval (faint: the interval includes 0)")


def all_charts(cmp: "Comparison") -> list[tuple[str, alt.TopLevelMixin]]:
    """The comparison's charts with a one-line caption each."""
    return [("Change per scope", changes(cmp)), ("Duration distributions, runs overlaid", distributions(cmp)),
            ("Duration per iteration, runs overlaid", trends(cmp))]


def dashboard(cmp: "Comparison"):
    """The comparison charts one above the other, in a widget that draws offline (``.chart``)."""
    from ..charts import ChartsWidget
    return ChartsWidget(alt.vconcat(*(chart for _, chart in all_charts(cmp))))
