"""Self-contained HTML reports: timelines, charts, statistics and warnings in one file.

The page carries everything it needs inline (the front-end runtime with vega, vega-lite
and vega-embed, the styles, each trace's data and chart specs), so it opens anywhere
with no network. Names from traces are data: they are escaped in the HTML, drawn as
text by the timeline and the charts, and embedded JSON cannot close its script tag."""
from __future__ import annotations

import datetime
import html
from pathlib import Path
from typing import Sequence

from . import site_rows
from ._version import __version__
from .analysis import scope_stats
from .charts import all_charts, duration_unit
from .notes import notes
from .outputs import atomic_write
from .serializers import embedded_state, script_json, timeline_payload
from .stall_reasons import per_scope
from .trace import Trace
from .units import format_scaled

STATIC = Path(__file__).parent / "static"
TIMELINE_HEIGHT = 480


def static_text(name: str) -> str:
    """A built front-end file of ``static/`` (built from ``js/``), checked to be safe to
    inline in a <script> or <style> element."""
    text = (STATIC / name).read_text(encoding="utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"static/{name} contains a closing </script or </style tag and cannot be inlined")
    return text


def runtime_script() -> str:
    """The front-end runtime (static/runtime.js, the charts widget's module too) as the
    page's module script: it mounts the page's timelines, comparisons and charts."""
    return f'<script type="module">{static_text("runtime.js")}</script>'


def _check_sections(title, sections) -> list[tuple[str, list[Trace]]]:
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    if not isinstance(sections, Sequence) or isinstance(sections, (str, bytes)):
        raise TypeError(f"sections must be a list of (heading, [Trace, ...]) pairs, got {type(sections).__name__}")
    checked = []
    for index, section in enumerate(sections):
        if not (isinstance(section, (tuple, list)) and len(section) == 2 and isinstance(section[0], str)):
            raise TypeError(f"section {index} must be a (heading, [Trace, ...]) pair")
        heading, traces = section
        if isinstance(traces, Trace) or not isinstance(traces, Sequence):
            raise TypeError(f"section {index} ({heading!r}): the traces must be a list of Trace")
        for trace in traces:
            if not isinstance(trace, Trace):
                raise TypeError(f"section {index} ({heading!r}): expected Trace objects, got {type(trace).__name__}")
        checked.append((heading, list(traces)))
    return checked


def _stats_table(trace: Trace, unit: tuple[str, float]) -> str:
    """Per scope its count and durations, all in the page's ``unit``."""
    stats = scope_stats(trace.df)
    head = "".join(f"<th>{h}</th>" for h in ("scope", "kernel", "instances", "min", "median", "mean", "p95", "max",
                                             "total"))
    rows = []
    for row in stats.itertuples():
        cells = [html.escape(str(row.scope)), html.escape(str(row.kernel)), f"{int(row.count):,}"]
        cells += [format_scaled(v, unit[1])
                  for v in (row.min_ns, row.p50_ns, row.mean_ns, row.p95_ns, row.max_ns, row.total_ns)]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (f'<table class="gw-stats"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _sites_table(trace: Trace) -> str:
    """The sass tier's readings per scope (what ``gwatch show --sites`` prints); "" on other tiers."""
    scopes = site_rows.by_scope(site_rows.records(trace))
    if not scopes:
        return ""
    moved = any(r["moved"] for scope in scopes for r in scope["readings"])  # else no column for it
    head = "".join(f"<th>{h}</th>" for h in ("scope", "kind", "origin", "pair", "at", *(["moved"] if moved else []),
                                             "stores", "loop", "span", "own", "other", "unscoped", "sharpness"))
    dash = lambda value: "-" if value is None else str(value)
    several_kernels = len({scope["kernel"] for scope in scopes}) > 1
    rows = []
    for scope in scopes:
        label = (f"{scope['kernel']} · " if several_kernels else "") + f"{scope['scope']} [{scope['scope_id']}]"
        for k, r in enumerate(scope["readings"]):
            cells = [label if not k else "", r["kind"], r["origin"], r["pair"], r["index"],
                     *([f"{r['moved']:+d}" if r["moved"] else ""] if moved else []), r["store"], dash(r["loop"]),
                     dash(r["span"]), dash(r["own"]), dash(r["other_scopes"]), dash(r["unscoped"]),
                     site_rows.label(r)]
            rows.append(f'<tr data-site="{r["site"]}">' + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
                        + "</tr>")
    return ("<h4>Where the readings landed (sass tier)</h4>"
            f'<p class="gw-run-facts">{html.escape(site_rows.SHARPNESS_RULE)}</p>'
            f'<table class="gw-stats gw-site-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _stalls_table(trace: Trace) -> str:
    """Per scope its PC samples and the share of each stall reason (what ``gwatch show
    --stalls`` prints); "" where the trace sampled none."""
    if not trace.meta.get("stalls"):
        return ""
    scopes = per_scope(trace.stalls)
    several_kernels = len({scope["kernel"] for scope in scopes}) > 1
    rows = []
    for scope in scopes:
        shares = ", ".join(f"{r['reason']} {r['share']:.0%}" for r in scope["reasons"] if r["share"] >= 0.01)
        label = (f"{scope['kernel']} · " if several_kernels else "") + str(scope["scope"])
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in (label, f"{scope['samples']:,}", shares))
                    + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("scope", "samples", "stall reasons (share of the scope's samples)"))
    return ("<h4>Why each scope's warps stalled (PC samples)</h4>"
            f'<table class="gw-stats gw-stall-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _run_facts(trace: Trace) -> str:
    launches = trace.launches
    kernels = ", ".join(sorted({str(k) for k in launches["kernel"]})) or "no kernel"
    facts = [f"{len(launches)} launch{'es' if len(launches) != 1 else ''} of {kernels}",
             f"{int(launches['warps'].sum()):,} warps" if len(launches) else "0 warps",
             f"{len(trace.df):,} scope instances",
             f"time: {trace.meta['time_source']}"]
    if trace.meta.get("scopes_traced") is not None:
        facts.append(f"only scopes {', '.join(map(str, trace.meta['scopes_traced']))} traced")
    if trace.meta.get("created"):
        facts.append(f"recorded {trace.meta['created']}")
    facts += [f"config {c}" for c in dict.fromkeys(launches["config"]) if c] if len(launches) else []
    facts += notes(trace)
    return " · ".join(html.escape(f) for f in facts)


def chart_figures(charts, id_prefix: str) -> list[str]:
    """Each (caption, altair chart) as a figure the report runtime mounts, its spec inline as JSON."""
    figures = []
    for index, (caption, chart) in enumerate(charts):
        chart_id = f"{id_prefix}-{index}"
        figures.append(f'<figure class="gw-chart-figure" aria-label="{html.escape(caption)}">'
                       f'<div data-gw-chart="{chart_id}"></div></figure>'
                       f'<script type="application/json" id="{chart_id}">{script_json(chart.to_dict())}</script>')
    return figures


def _run(trace: Trace, section: int, run: int, runs: int, unit: tuple[str, float]) -> str:
    key = f"{section}-{run}"
    parts = [f'<article class="gw-run" id="run-{key}">']
    if runs > 1:
        kernels = ", ".join(sorted({r.kernel for r in trace.records})) or "no kernel"
        parts.append(f"<h3>{html.escape(f'Run {run + 1}: {kernels}')}</h3>")
    parts.append(f'<p class="gw-run-facts">{_run_facts(trace)}</p>')
    if trace.warnings:
        items = "".join(f"<li>{html.escape(str(w))}</li>" for w in trace.warnings)
        parts.append(f'<ul class="gw-warnings">{items}</ul>')
    state = embedded_state(timeline_payload(trace), launch=0, height=TIMELINE_HEIGHT, selected={})
    parts.append(f'<div class="gw-timeline-mount" data-gw-timeline="gw-data-{key}"></div>')
    parts.append(f'<script type="application/json" id="gw-data-{key}">{state}</script>')
    # Several launches: one set of charts each, shown as the timeline's launch picker says (report.ts).
    each = [trace] if len(trace.records) < 2 else [Trace([r], trace.scope_names, trace.meta) for r in trace.records]
    for launch, part in enumerate(each):
        picked = f' data-gw-launch="{launch}"' + (" hidden" if launch else "") if len(each) > 1 else ""
        parts.append(f'<div class="gw-charts"{picked}>')
        parts += chart_figures(all_charts(part, unit), f"gw-chart-{key}-{launch}")
        parts.append("</div>")
    parts.append(f"<h4>Scope statistics (durations in {unit[0]})</h4>")
    parts.append(_stats_table(trace, unit))
    parts.append(_sites_table(trace))
    parts.append(_stalls_table(trace))
    parts.append("</article>")
    return "\n".join(parts)


def page(title: str, sections: list[tuple[str, list[Trace]]]) -> str:
    """One self-contained HTML page: per section a heading, per trace (run) its timeline,
    charts, scope statistics and warnings."""
    checked = _check_sections(title, sections)
    unit = duration_unit([trace for _, traces in checked for trace in traces])  # one unit for the page's durations
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="gw-generated">gwatch-nb {html.escape(__version__)} · written {generated}</p>']
    if len(checked) > 1:
        links = "".join(f'<li><a href="#section-{i}">{html.escape(h)}</a></li>' for i, (h, _) in enumerate(checked))
        body.append(f'<ol class="gw-contents">{links}</ol>')
    for index, (heading, traces) in enumerate(checked):
        body.append(f'<section class="gw-section" id="section-{index}"><h2>{html.escape(heading)}</h2>')
        if not traces:
            body.append('<p class="gw-run-facts">no runs</p>')
        body.extend(_run(trace, index, run, len(traces), unit) for run, trace in enumerate(traces))
        body.append("</section>")
    return "\n".join([
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{static_text('widget.css')}\n{static_text('report.css')}</style>",
        '</head><body><main class="gw-report">',
        *body,
        "</main>",
        runtime_script(),
        "</body></html>",
    ])


def render_document(title: str, sections: list[tuple[str, list[Trace]]], path) -> None:
    """Write ``page(title, sections)`` to a file (atomically: see outputs.atomic_write)."""
    text = page(title, sections)
    with atomic_write(path) as out:
        out.write(text.encode())


def trace_page(trace: Trace, title: str | None = None) -> str:
    """One trace as a page of one section (what ``Trace.to_html`` writes)."""
    if not isinstance(trace, Trace):
        raise TypeError(f"expected a gwatch_nb.Trace, got {type(trace).__name__}")
    kernels = ", ".join(sorted({r.kernel for r in trace.records})) or "trace"
    return page(title if title is not None else f"gwatch-nb: {kernels}", [(kernels, [trace])])
