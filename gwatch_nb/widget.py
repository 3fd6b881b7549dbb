"""The timeline widget: per-warp swimlanes of a Trace's scope instances, in Jupyter.

The front end is the bundle in ``static/`` (built from ``js/``); the data goes to it as
binary buffers (see serializers.py). A click on a slice sets ``selected``."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anywidget
import traitlets

from .serializers import timeline_payload
from .trace import Trace

if TYPE_CHECKING:
    import pandas as pd

STATIC = Path(__file__).parent / "static"


class TimelineWidget(anywidget.AnyWidget):
    """Swimlanes per warp, grouped SM → block → warp, one colour per scope.

    Wheel zooms around the pointer, drag pans, double-click shows the whole launch, a click
    selects a scope instance: ``selected`` then holds its description (``row`` is its
    position in ``trace.df``) and ``selected_row`` its DataFrame row. On the sass tier a panel
    under the timeline then lists its scope's readings (``trace.sites``: where each landed in
    the compiled kernel, how sharp the scope's boundary is)."""

    _esm = STATIC / "widget.js"
    _css = STATIC / "widget.css"

    payload = traitlets.Dict().tag(sync=True)
    launch = traitlets.Int(0).tag(sync=True)
    height = traitlets.Int(520).tag(sync=True)
    selected = traitlets.Dict().tag(sync=True)

    def __init__(self, trace: Trace, *, launch: int = 0, height: int = 520, **kwargs):
        if not isinstance(trace, Trace):
            raise TypeError(f"TimelineWidget needs a gwatch_nb.Trace, got {type(trace).__name__}")
        self._trace = trace
        super().__init__(payload=timeline_payload(trace), launch=launch, height=height, **kwargs)

    @traitlets.validate("launch")
    def _check_launch(self, proposal):
        count = len(self._trace.records)
        if not 0 <= proposal["value"] < max(count, 1):
            raise traitlets.TraitError(f"launch must be between 0 and {count - 1}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("height")
    def _check_height(self, proposal):
        if proposal["value"] < 120:
            raise traitlets.TraitError(f"height must be at least 120 pixels, got {proposal['value']}")
        return proposal["value"]

    @property
    def trace(self) -> Trace:
        return self._trace

    @property
    def selected_row(self) -> "pd.Series | None":
        """The selected scope instance's row of ``trace.df``, or None."""
        row = self.selected.get("row")
        if not isinstance(row, int) or not 0 <= row < len(self._trace.df):
            return None
        return self._trace.df.iloc[row]
