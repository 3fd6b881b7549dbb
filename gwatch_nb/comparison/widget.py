"""The comparison in a notebook: the runs' timelines on one time axis, zoom and pan in step
(``static/compare_widget.js``, built from ``js/src/compare*``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import anywidget
import traitlets

from ..html import STATIC
from ..serializers import timeline_payload
from ..palette import run_colour

if TYPE_CHECKING:
    from .tables import Comparison


class CompareWidget(anywidget.AnyWidget):
    """One swimlane timeline per run, stacked; the wheel zooms and a drag pans all of them."""

    _esm = STATIC / "compare_widget.js"
    _css = STATIC / "compare.css"

    runs = traitlets.List().tag(sync=True)
    height = traitlets.Int(720).tag(sync=True)

    def __init__(self, cmp: "Comparison", *, height: int = 720, **kwargs):
        if height < 240:
            raise ValueError(f"height must be at least 240 pixels, got {height}")
        runs = [{"label": run.label, "color": run_colour(i), "payload": timeline_payload(run.trace)}
                for i, run in enumerate(cmp.runs)]
        super().__init__(runs=runs, height=height, **kwargs)


def display_comparison(cmp: "Comparison") -> None:
    """What a notebook shows for a Comparison: verdicts and tables, timelines, charts."""
    from IPython.display import HTML, display

    from .page import tables_html

    display(HTML(tables_html(cmp)), CompareWidget(cmp), cmp.charts())
