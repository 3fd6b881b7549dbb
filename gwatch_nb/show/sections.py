"""The sections of ``gwatch show``, in one list that drives what is computed, how it is
laid out as text and which command-line flags choose it.

``summarize`` turns a Trace and a Selection into plain data (``--json`` prints it);
``format_text`` lays that data out as text. A section flagged ``default`` is shown when no
section flag is given; the others only when asked for."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import site_rows, tiers
from ..trace import Trace
from . import raster, summaries, text
from .context import Context
from .selection import Selection


@dataclass(frozen=True)
class ShowSection:
    name: str                       # key in the summary (and in --json)
    flags: tuple[str, ...]          # command-line flags that choose it
    help: str
    compute: Callable[[Context], object]
    format: Callable[[object, text.Style, int], list[str]]
    default: bool = True
    metavar: str | None = None      # the flag takes a value (a scope name), repeatable
    # A default section only on the traces this picks, and how the help says which: (words, test).
    only_on: tuple[str, Callable[[Trace], bool]] | None = None

    def shown_by_default(self, trace: Trace) -> bool:
        return self.default and (self.only_on is None or self.only_on[1](trace))


_SITE_TIERS = ("on " + "/".join(t.name for t in tiers.TIERS.values() if t.has_sites) + "-tier traces",
               lambda trace: tiers.of(trace).has_sites)
_SAMPLED = ("on traces with stall samples", lambda trace: bool(trace.meta.get("stalls")))


SECTIONS = (
    ShowSection("stats", ("--stats",), "per-scope count, min, p50, mean, p95, max, total",
                summaries.stats, text.stats),
    ShowSection("pipeline", ("--pipeline", "--bubbles"),
                "busy vs idle time per warp, the idlest warps, the longest gaps (bubbles)",
                summaries.pipeline, text.pipeline),
    ShowSection("timeline", ("--timeline",), "one row of characters per warp, a letter per scope",
                raster.timeline, text.timeline),
    ShowSection("concurrency", ("--concurrency",), "how many warps are inside each scope over time",
                summaries.concurrency, text.concurrency),
    ShowSection("outliers", ("--outliers",), "the slowest scope instances", summaries.outliers, text.outliers),
    ShowSection("longest", ("--longest",), "the longest instance of scope NAME (repeatable)",
                summaries.longest, text.longest, default=False, metavar="NAME"),
    ShowSection("longest_bubble", ("--longest-bubble",), "the longest gap between scopes on any warp",
                summaries.longest_bubble, text.longest_bubble, default=False),
    ShowSection("sites", ("--sites",),
                "per scope, where its clock readings landed in the compiled kernel and how much of other "
                "scopes' code ptxas interleaved with it (sass tier; shown there by default); "
                + site_rows.SHARPNESS_RULE,
                summaries.sites, text.sites, only_on=_SITE_TIERS),
    ShowSection("stalls", ("--stalls",),
                "per scope, why its warps stalled: the PC samples of each stall reason and their share "
                "(traces made with stalls=True; shown there by default)",
                summaries.stalls, text.stalls, only_on=_SAMPLED),
)
#: The sections shown when none is asked for (those of one tier only on that tier's traces).
VIEWS = tuple(s.name for s in SECTIONS if s.default)


def default_views(trace: Trace) -> tuple[str, ...]:
    return tuple(s.name for s in SECTIONS if s.shown_by_default(trace))


def summarize(trace: Trace, selection: Selection, views=None, width: int = 100, rows: int = 8, top: int = 5,
              sort_by: str | None = None, longest: list[str] = ()) -> dict:
    """Everything ``gwatch show`` prints, as plain data (times in ns): the ``views`` named, else
    the trace's default sections (default_views). ``width`` sets how many
    time slices the timeline and concurrency have (they fit a line that wide); ``sort_by``
    ("active", "bubble" or a scope) orders the timeline's warps; ``longest`` names the
    scopes whose longest instance the "longest" section shows."""
    views = default_views(trace) if views is None else views
    unknown = set(views) - {s.name for s in SECTIONS}
    if unknown:
        raise ValueError(f"unknown section(s) {', '.join(sorted(unknown))}; "
                         f"sections: {', '.join(s.name for s in SECTIONS)}")
    selection.check(trace)
    if sort_by is not None and sort_by not in raster.SORT_KEYS:
        Selection(scopes=[sort_by]).scope_ids(trace)  # a scope name, else SelectionError naming the scopes
    context = Context(trace, selection, width=width, rows=rows, top=top, sort_by=sort_by, longest=list(longest))
    out = {"header": summaries.header(context)}
    for section in SECTIONS:
        if section.name in views:
            out[section.name] = section.compute(context)
    return summaries.plain(out)


def format_text(summary: dict, width: int = 100, unicode: bool = True) -> str:
    style = text.Style(unicode)
    lines = text.header(summary["header"], style, width)
    for section in SECTIONS:
        if section.name in summary:
            lines += [""] + section.format(summary[section.name], style, width)
    return "\n".join(lines) + "\n"
