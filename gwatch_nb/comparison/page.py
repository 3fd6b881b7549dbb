"""A comparison as HTML: the verdicts and tables (also shown in a notebook), and the
one-file offline page holding them with the charts and the runs' timelines in step
(written by outputs.FORMATS, like every file).

Like ../html.py, the page carries everything inline (the report runtime with vega, the
styles, each run's data and chart specs) and requests nothing when opened."""
from __future__ import annotations

import datetime
import html
from typing import TYPE_CHECKING

from ..html import chart_figures, runtime_script, static_text
from ..palette import run_colour
from ..serializers import embedded_state, timeline_payload
from ..units import format_ns
from .charts import all_charts
from .tables import STALL_CHANGE_POINTS, no_stall_change

if TYPE_CHECKING:
    from .tables import Comparison

TIMELINE_HEIGHT = 720


def _change(row) -> str:
    if row["change"] != row["change"]:  # NaN: the baseline
        return ""
    text = f"{row['change']:+.1%}"
    if row["ci_low"] == row["ci_low"]:
        text += f" [{row['ci_low']:+.1%}, {row['ci_high']:+.1%}]"
    return f"<strong>{text}</strong>" if isinstance(row["verdict"], str) else text


def _table(head: list[str], rows: list[list[str]]) -> str:
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="gw-stats"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def _list(items: list[str], css: str) -> str:
    return f'<ul class="{css}">' + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def tables_html(cmp: "Comparison") -> str:
    """Verdicts, notes, the per-scope and the kernel table."""
    parts = [f"<p>{html.escape(' vs '.join(cmp.labels))}: change of the mean against {html.escape(cmp.labels[0])}, "
             f"{cmp.level:.0%} percentile-bootstrap interval over warps; bold where it excludes 0.</p>",
             _list(cmp.verdicts or ["no change whose interval excludes 0"], "gw-compare-verdicts")]
    if cmp.notes:
        parts.append(_list(cmp.notes, "gw-compare-notes"))
    if len(cmp.stalls):
        parts.append("<p>Why: the stall reasons whose share of a scope's PC samples moved most.</p>")
        parts.append(_list(cmp.stall_changes or [no_stall_change(STALL_CHANGE_POINTS)], "gw-compare-notes"))
    rows = [[html.escape(str(r["scope"])), html.escape(str(r["run"])), f"{int(r['count']):,}", format_ns(r["p50_ns"]),
             format_ns(r["p95_ns"]), format_ns(r["mean_ns"]), format_ns(r["total_ns"]), f"{r['share']:.1%}", _change(r)]
            for _, r in cmp.df.iterrows()]
    parts.append(_table(["scope", "run", "count", "p50", "p95", "mean", "total", "share of warp time",
                         "change of mean [CI]"], rows))
    rows = [[html.escape(r["what"]), html.escape(str(r["run"])),
             f"{r['value']:.1%}" if r["measure"] == "idle_share" else format_ns(r["value"]),
             html.escape(f"{r['samples']:,} {r['samples_of']}"), _change(r)] for _, r in cmp.kernel.iterrows()]
    parts.append(_table(["measure", "run", "value", "samples", "change [CI]"], rows))
    return "\n".join(parts)


def _detail_table(table, column: str) -> str:
    rows = [[html.escape(str(r["scope"])), str(r[column]), html.escape(str(r["run"])), f"{int(r['count']):,}",
             format_ns(r["mean_ns"]), _change(r)] for _, r in table.iterrows()]
    return _table(["scope", column, "run", "count", "mean", "change [CI]"], rows)


def timelines_state(cmp: "Comparison", height: int = TIMELINE_HEIGHT) -> str:
    """The runs' timeline data for the page, binary columns as zlib + base64."""
    runs = [embedded_state(timeline_payload(run.trace), label=run.label, color=run_colour(i))
            for i, run in enumerate(cmp.runs)]
    return f'{{"height":{int(height)},"runs":[{",".join(runs)}]}}'


def page(cmp: "Comparison", title: str | None = None) -> str:
    """The whole offline page."""
    from .._version import __version__

    title = title if title is not None else "gwatch-nb comparison: " + " vs ".join(cmp.labels)
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="gw-generated">gwatch-nb {html.escape(__version__)} · written {generated}</p>',
            tables_html(cmp), "<h2>Timelines</h2>",
            '<div class="gw-compare-mount" data-gw-compare="gw-compare-data"></div>',
            f'<script type="application/json" id="gw-compare-data">{timelines_state(cmp)}</script>',
            "<h2>Charts</h2>", '<div class="gw-charts">']
    body += chart_figures(all_charts(cmp), "gw-compare-chart")
    body.append("</div>")
    body += ["<h2>Per warp role (warp index in its block)</h2>", _detail_table(cmp.roles, "role"),
             "<h2>Per iteration (seq)</h2>", _detail_table(cmp.iterations, "seq")]
    return "\n".join([
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{static_text('widget.css')}\n{static_text('report.css')}\n{static_text('compare.css')}</style>",
        '</head><body><main class="gw-report">', *body, "</main>",
        runtime_script(), "</body></html>",
    ])
