"""The sections of ``gwatch show``, in one list that drives what is computed, how it is
laid out as text and which command-line flags choose it.

``summarize`` turns a Trace and a Selection into plain data (``--json`` prints it);
``format_text`` lays that data out as text. A section flagged ``default`` is shown when no
section flag is given; the others only when asked for."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

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
)
VIEWS = tuple(s.name for s in SECTIONS if s.default)


def summarize(trace: Trace, selection: Selection, views=VIEWS, width: int = 100, rows: int = 8, top: int = 5,
              sort_by: str | None = None, longest: list[str] = ()) -> dict:
    """Everything ``gwatch show`` prints, as plain data (times in ns). ``width`` sets how many
    time slices the timeline and concurrency have (they fit a line that wide); ``sort_by``
    ("active", "bubble" or a scope) orders the timeline's warps; ``longest`` names the
    scopes whose longest instance the "longest" section shows."""
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
