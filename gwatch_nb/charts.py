"""Summary charts of a Trace (altair), and the widget that shows them in a notebook.

Every chart is drawn from an aggregate (analysis.py), never from the scope instances
themselves, and stays under altair's default 5,000-row limit whatever the trace's size:
a two-million-instance trace charts as fast and as small as a small one."""
from __future__ import annotations

import textwrap
from pathlib import Path

import altair as alt
import anywidget
import numpy as np
import pandas as pd
import traitlets

from . import tiers
from .analysis import seq_trend, sm_activity, warp_activity
from .palette import BUSY, IDLE, scope_colours, stall_reason_colours
from .trace import Trace
from .units import range_unit

#: Upper bound of data rows embedded per chart (altair refuses more than 5,000 by default).
MAX_CHART_ROWS = 4000
HISTOGRAM_BINS = 40
SM_TIME_BINS = 150
WARP_POINTS = 400
WIDTH = 460


def _axis(title: str, flush: bool = False, **kw) -> alt.Axis:
    """An axis whose labels keep a few pixels apart (some are dropped instead) and stay
    within the chart; ``flush`` draws an x axis's end labels inward."""
    return alt.Axis(title=title, labelOverlap="greedy", labelSeparation=4, labelFlush=flush, **kw)


def _scope_colour(trace: Trace, title: str | None = "scope") -> alt.Color:
    names = [str(n) for n in trace.df["scope"].cat.categories]
    return alt.Color("scope:N", scale=alt.Scale(domain=names, range=scope_colours(len(names))),
                     sort=names, title=title)


def duration_unit(traces) -> tuple[str, float]:
    """The one unit of a page's durations (its histograms, trends and tables), chosen from
    the data: the range unit of the longest instance of any of its traces, so no scope
    reads in µs beside another in ms."""
    longest = max((float(t.df["duration_ns"].max()) for t in traces if len(t.df)), default=0.0)
    return range_unit(longest)


def duration_distribution(trace: Trace, unit: tuple[str, float] | None = None) -> alt.FacetChart:
    """A histogram of each scope's instance durations, one row per scope, all in one
    ``unit`` (``duration_unit`` of the trace unless given)."""
    df = trace.df
    name_of_unit, scale = unit or duration_unit([trace])
    parts = []
    for name, durations in df.groupby("scope", observed=True)["duration_ns"]:
        counts, edges = np.histogram(durations.to_numpy(), bins=HISTOGRAM_BINS)
        parts.append(pd.DataFrame({"scope": str(name), "start": edges[:-1] / scale, "end": edges[1:] / scale,
                                   "count": counts}))
    hist = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        {"scope": pd.Series(dtype=str), "start": [], "end": [], "count": []})
    base = alt.Chart(hist).mark_rect().encode(
        x=alt.X("start:Q", axis=_axis(f"duration ({name_of_unit})", flush=True, tickCount=6),
                scale=alt.Scale(zero=False, nice=False)),
        x2="end:Q",
        y=alt.Y("count:Q", axis=_axis("instances", tickCount=3)), y2=alt.datum(0),
        color=_scope_colour(trace),
        tooltip=[alt.Tooltip("scope:N"), alt.Tooltip("start:Q", title=f"from ({name_of_unit})", format=",.4~r"),
                 alt.Tooltip("end:Q", title=f"to ({name_of_unit})", format=",.4~r"),
                 alt.Tooltip("count:Q", format=",")],
    ).properties(width=WIDTH, height=70)
    names = list(dict.fromkeys(hist["scope"]))
    return base.facet(row=alt.Row("scope:N", sort=names, title=None,
                                  header=alt.Header(labelAngle=0, labelAlign="left", labelLimit=160))
                      ).resolve_scale(x="independent", y="independent").properties(
        title="Duration of each scope's instances")


def sm_activity_over_time(trace: Trace, launch: int = 0) -> alt.Chart:
    """Per SM and time slice of one launch: how many warps are inside an outermost scope.

    One row per SM carries its slices as a list, expanded in the browser (vega-lite's
    flatten), so the embedded data grows with the SM count, not with SMs × slices."""
    df = trace.df
    if not 0 <= launch < max(len(trace.records), 1):
        raise ValueError(f"launch must be between 0 and {len(trace.records) - 1}, got {launch}")
    part = df[df["launch"] == launch]
    activity = sm_activity(part, bins=SM_TIME_BINS)
    step_ns = float(activity["t_end_ns"].iloc[0] - activity["t_ns"].iloc[0]) if len(activity) else 1.0
    per_sm = (activity.groupby("sm", observed=True)["warps"]
              .agg(lambda w: np.round(w.to_numpy(), 2).tolist()).reset_index())
    unit, scale = range_unit(step_ns * SM_TIME_BINS)
    step = step_ns / scale
    host_time = ", interpreter host time" if tiers.of(trace).host_clock else ""
    title = "Warps inside an outermost scope, per SM"
    if len(trace.records) > 1:
        title += f" (launch {launch} of {len(trace.records)})"
    return alt.Chart(per_sm).transform_flatten(["warps"]).transform_window(
        slice="row_number()", groupby=["sm"],
    ).transform_calculate(
        t0=f"(datum.slice - 1) * {step!r}", t1=f"datum.slice * {step!r}",
    ).mark_rect().encode(
        x=alt.X("t0:Q", axis=_axis(f"time since launch start ({unit}{host_time})", flush=True, tickCount=8),
                scale=alt.Scale(nice=False)), x2="t1:Q",
        y=alt.Y("sm:O", axis=_axis("SM")),
        color=alt.Color("warps:Q", title="warps", scale=alt.Scale(scheme="viridis")),
        tooltip=[alt.Tooltip("sm:O", title="SM"), alt.Tooltip("t0:Q", title=f"from ({unit})", format=",.4~r"),
                 alt.Tooltip("warps:Q", title="mean warps", format=".2f")],
    ).properties(width=WIDTH, height=max(120, min(4 * len(per_sm), 560)), title=title)


def iteration_trend(trace: Trace, unit: tuple[str, float] | None = None) -> alt.Chart:
    """Median and p95 duration of each scope's nth instance in a warp (loop iteration), in
    ``unit`` (``duration_unit`` of the trace unless given)."""
    trend = seq_trend(trace.df)
    scopes = max(trend["scope"].nunique(), 1)
    stride = int(np.ceil(trend["seq"].nunique() * scopes / MAX_CHART_ROWS)) if len(trend) else 1
    if stride > 1:  # very long loops: every stride-th iteration is plenty for a line
        trend = trend[trend["seq"] % stride == 0]
    unit, scale = unit or duration_unit([trace])
    trend = trend.assign(scope=trend["scope"].astype(str), median=trend["p50_ns"] / scale,
                         p95=trend["p95_ns"] / scale).drop(columns=["p50_ns", "p95_ns"])
    title = "Duration per iteration (nth instance in its warp): median solid, p95 dashed"
    if stride > 1:
        title += f", one iteration in {stride}"
    return alt.Chart(trend).transform_fold(["median", "p95"], as_=["statistic", "duration"]).mark_line(
        point=alt.OverlayMarkDef(size=14),
    ).encode(
        x=alt.X("seq:Q", axis=_axis("iteration (seq)", flush=True, tickMinStep=1, format="d")),
        y=alt.Y("duration:Q", axis=_axis(f"duration ({unit})")),
        color=_scope_colour(trace),
        strokeDash=alt.StrokeDash("statistic:N", legend=None,
                                  scale=alt.Scale(domain=["median", "p95"], range=[[1, 0], [4, 3]])),
        tooltip=[alt.Tooltip("scope:N"), alt.Tooltip("seq:Q"), alt.Tooltip("statistic:N"),
                 alt.Tooltip("duration:Q", title=f"duration ({unit})", format=",.4~r"),
                 alt.Tooltip("count:Q", format=",")],
    ).properties(width=WIDTH, height=220, title=title)


def warp_busy_share(trace: Trace) -> alt.Chart:
    """Each warp's share of its lifetime inside an outermost scope (busy) and outside (idle),
    warps ranked from busiest to idlest."""
    activity = warp_activity(trace)
    share = np.sort(activity.loc[activity["exited"], "busy_share"].to_numpy())[::-1]
    if len(share) > WARP_POINTS:  # evenly spaced ranks draw the same curve
        share = share[np.linspace(0, len(share) - 1, WARP_POINTS).round().astype(int)]
    rank = np.linspace(0, 100, len(share)) if len(share) > 1 else np.zeros(len(share))
    points = pd.DataFrame({"rank_pct": rank, "busy": share, "idle": 1 - share})
    return alt.Chart(points).transform_fold(["busy", "idle"], as_=["state", "share"]).mark_area().encode(
        x=alt.X("rank_pct:Q", axis=_axis(f"warps ranked by busy share (% of {int(activity['exited'].sum()):,} warps)",
                                            flush=True)),
        y=alt.Y("share:Q", stack="zero", axis=_axis("share of the warp's lifetime", format="%")),
        color=alt.Color("state:N", title=None,
                        scale=alt.Scale(domain=["busy", "idle"], range=[BUSY, IDLE])),
        order=alt.Order("state:N", sort="ascending"),
        tooltip=[alt.Tooltip("rank_pct:Q", title="rank (%)", format=".1f"), alt.Tooltip("state:N"),
                 alt.Tooltip("share:Q", format=".1%")],
    ).properties(width=WIDTH, height=180, title="Each warp's busy vs idle share")


#: What the interpreter tier's times cannot show, said in place of the charts they would
#: fill with one solid block (interpreter.py: program instances run one after another on
#: the host, each one "warp" on "SM 0", alive from its first marker to its last).
INTERPRETER_CANNOT_SHOW = {
    "sm": ("The interpreter runs the program instances one at a time on the host, all on one pretend SM: "
           "it has no per-SM occupancy to show. Trace on a GPU tier (ptx or sass) to see it."),
    "busy": ("The interpreter times a program instance from its first marker to its last, so each reads all "
             "busy: idle time needs the GPU tiers' warp entry and exit times."),
}


def stall_reasons(trace: Trace) -> alt.Chart:
    """Per scope a bar of its stall reasons' shares (trace.stalls), the reasons stacked by
    their share, each scope labelled with its samples; one row per kernel and scope."""
    table = trace.stalls
    totals = table.groupby(["kernel", "scope"], sort=False)["samples"].transform("sum")
    several = table["kernel"].nunique() > 1
    table = table.assign(label=[(f"{k} · " if several else "") + f"{n} ({t:,})"
                                for k, n, t in zip(table["kernel"], table["name"], totals)])
    order = list(table.assign(total=totals).sort_values("total", ascending=False)["label"].drop_duplicates())
    reasons = list(table.groupby("reason")["samples"].sum().sort_values(ascending=False).index)
    return alt.Chart(table).mark_bar().encode(
        x=alt.X("share:Q", stack="zero", axis=_axis("share of the scope's PC samples", format="%"),
                scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("label:N", sort=order, axis=_axis(None, labelLimit=260)),
        color=alt.Color("reason:N", scale=alt.Scale(domain=reasons, range=stall_reason_colours(reasons)),
                        sort=reasons, title="stall reason"),
        order=alt.Order("samples:Q", sort="descending"),
        tooltip=[alt.Tooltip("name:N", title="scope"), alt.Tooltip("reason:N"),
                 alt.Tooltip("samples:Q", format=","), alt.Tooltip("share:Q", format=".1%"),
                 alt.Tooltip("not_issued:Q", format=",", title="of them not issued")],
    ).properties(width=WIDTH, height=22 * len(order),
                 title=f"Why each scope's warps stalled (PC samples every 2^{trace.meta['stalls']['period']} cycles)")


def cannot_show(title: str, why: str) -> alt.Chart:
    """A chart's place holding its title and why the trace cannot fill it, as text."""
    lines = textwrap.wrap(why, 80)
    return alt.Chart(pd.DataFrame({"line": lines, "row": range(len(lines))})).mark_text(
        align="left", baseline="middle", fontSize=12,
    ).encode(x=alt.value(0), y=alt.Y("row:O", axis=None), text="line:N").properties(
        width=WIDTH, height=18 * len(lines), title=alt.TitleParams(title, anchor="start"),
        view=alt.ViewBackground(stroke=None))


def all_charts(trace: Trace, unit: tuple[str, float] | None = None) -> list[tuple[str, alt.TopLevelMixin]]:
    """The summary charts with a one-line caption each, durations in ``unit`` (a page's
    ``duration_unit``; the trace's own unless given)."""
    if not isinstance(trace, Trace):
        raise TypeError(f"charts need a gwatch_nb.Trace, got {type(trace).__name__}")
    unit = unit or duration_unit([trace])
    host = tiers.of(trace).host_clock  # host times: no SM, no warp residency to draw
    return [
        ("Duration distribution per scope", duration_distribution(trace, unit)),
        ("Per-SM activity over time", cannot_show("Warps inside an outermost scope, per SM",
                                                  INTERPRETER_CANNOT_SHOW["sm"]) if host
         else sm_activity_over_time(trace)),
        ("Duration per iteration", iteration_trend(trace, unit)),
        ("Busy vs idle share per warp", cannot_show("Each warp's busy vs idle share", INTERPRETER_CANNOT_SHOW["busy"])
         if host else warp_busy_share(trace)),
    ] + ([("Stall reasons per scope", stall_reasons(trace))] if trace.meta.get("stalls") else [])


class ChartsWidget(anywidget.AnyWidget):
    """An altair chart drawn by the vega bundled in ``static/runtime.js`` (the HTML
    report's runtime too), so it shows with no network (altair's own notebook renderers
    load vega from a CDN). ``chart`` is the altair object, to save or combine further."""

    _esm = Path(__file__).parent / "static" / "runtime.js"
    spec = traitlets.Dict().tag(sync=True)

    def __init__(self, chart: alt.TopLevelMixin, **kwargs):
        self.chart = chart
        super().__init__(spec=chart.to_dict(), **kwargs)


def dashboard(trace: Trace) -> alt.VConcatChart:
    """All summary charts, one above the other (what ``Trace.charts()`` shows)."""
    return alt.vconcat(*(chart for _, chart in all_charts(trace))).resolve_scale(color="independent")
