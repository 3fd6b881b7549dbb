"""What every view says about a trace beside its scopes and warnings, one line per fact.

The modules that own a ``Trace.meta`` entry word their own facts (instrumentation_cost.py
what instrumenting changed, autotune.py what the autotuner did, overhead.py what tracing
cost, stall_reasons.py how stalls were sampled); ``notes`` puts their lines in one order,
and the widget, ``%%gwatch``, the HTML report and ``gwatch show`` each print
``notes(trace)`` and word none of them themselves.
A launch's config and the sass tier's sites are per launch and per reading: the views
show them beside the launch and in their own table."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import instrumentation_cost, overhead, stall_reasons

if TYPE_CHECKING:
    from .trace import Trace


def notes(trace: "Trace") -> list[str]:
    """The trace's notes; the tracing cost comes last (the widget's toolbar shows that one)."""
    from . import autotune  # it imports triton; reading meta["autotune"] needs none of it
    return (instrumentation_cost.summaries(trace.meta) + autotune.summaries(trace.meta)
            + stall_reasons.summaries(trace.meta) + [overhead.summary(trace.overhead)])
