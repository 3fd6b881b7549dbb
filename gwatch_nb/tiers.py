"""The tracing tiers, and the one protocol each tier's session implements.

A tier is a way of making the markers of matching kernels record: ``ptx`` swaps the
matching launches for copies instrumented in their PTX (cuda/session.py); ``sass`` swaps
them for the very cubin Triton loaded with clock readings spliced into its scheduled code
(cuda/sass_session.py); ``interpreter`` records host time under TRITON_INTERPRET=1
(interpreter.py). A new tier is a class
implementing ``TracingSession`` and one entry in ``TIERS``; ``do_trace`` and
``%%gwatch`` know tiers only through this module."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, runtime_checkable

from .errors import GwatchError
from .options import TraceOptions
from .records import LaunchRecords


@dataclass(frozen=True)
class Problem:
    """Something a session met that kept a launch from being traced as asked; ``kind``
    is one of PROBLEM_KINDS, ``message`` one line naming the kernel."""
    kind: str
    kernel: str
    message: str


#: Kinds of session problems (they become Trace.warnings of the same kind).
PROBLEM_KINDS = {
    "graph_capture": "launched during CUDA graph capture; it runs unmodified in the graph",
    "extra_params": "launched with packed 'extra' parameters; not traced",
    "ptx_not_found": "matched, but its PTX was not found (only Triton kernels can be traced)",
    "cubin_not_found": "matched, but the cubin Triton loaded was not found (the sass tier needs it)",
    "rewrite_failed": "the rewriter could not instrument its PTX",
    "ptxas_failed": "ptxas rejected the instrumented PTX",
    "load_failed": "the driver could not load the instrumented kernel",
    "markers_not_found": "matched, but none of its markers is traced",
    "launch_failed": "the instrumented launch failed",
    "collect_failed": "its records could not be collected",
    "internal": "tracing failed inside a launch callback",
    "instrumentation_cost": "instrumenting changed the kernel's resources enough to change how it runs",
    "sites_left_out": "the sass tier found no free registers for some readings; their scopes' pairs there are not traced",
    "sass_fallback": "the sass tier could not instrument it soundly; tier 'auto' traced it on the ptx tier instead",
}


@runtime_checkable
class TracingSession(Protocol):
    """One trace, from start() to stop(), of the launches ``options`` asks for."""

    #: The tier's name (a key of TIERS); what Trace.meta["tier"] says.
    tier: str
    options: TraceOptions
    #: Set when an interrupt arrived while the traced code ran (do_trace re-raises it).
    interrupted: bool

    def start(self) -> None:
        """Begin recording; raises before anything runs if tracing cannot work here."""

    def stop(self) -> None:
        """Stop recording and collect what was recorded; safe to call twice."""

    def records(self) -> list[LaunchRecords]:
        """The traced launches' records, once stopped."""

    @property
    def launched(self) -> Mapping[str, int]:
        """Every kernel seen launching, matching or not, and how often."""

    def problems(self) -> list[Problem]:
        """What kept matching launches from being traced, once stopped."""

    def meta(self) -> dict:
        """What the session learnt that the Trace should keep (Trace.meta entries)."""


@dataclass(frozen=True)
class Tier:
    name: str
    open: Callable[[TraceOptions], TracingSession]
    #: What the tier does, in a few words (the magic's and do_trace's help are made of these).
    help: str
    #: Said after "no launched kernel matched" when nothing launched at all.
    nothing_launched_hint: str = ""


def _ptx(options: TraceOptions) -> TracingSession:
    from .cuda.session import TraceSession
    return TraceSession(options)


def _sass(options: TraceOptions) -> TracingSession:
    from .cuda.sass_session import SassTraceSession
    return SassTraceSession(options)


def _interpreter(options: TraceOptions) -> TracingSession:
    from .interpreter import InterpreterRecorder
    return InterpreterRecorder(options)


TIERS = {
    "ptx": Tier("ptx", _ptx, "on the GPU, readings in the PTX"),
    "sass": Tier("sass", _sass, "readings spliced into the compiled kernel (sm_90 only)"),
    "interpreter": Tier("interpreter", _interpreter, "host time under TRITON_INTERPRET=1",
                        " (on the interpreter tier, set TRITON_INTERPRET=1 before the kernels are defined)"),
}
#: What "auto" chooses (resolve below).
AUTO_HELP = ("sass on an sm_90 GPU (ptx for each kernel the sass tier cannot trace soundly), ptx on another GPU, "
             "else interpreter")


def help_text() -> str:
    """One line per tier choice, from the table: what ``-t`` / ``instrumentation_tier`` offer."""
    return "; ".join([f"{tier.name}: {tier.help}" for tier in TIERS.values()] + [f"auto: {AUTO_HELP}"])


def resolve(tier: str) -> str:
    """'auto' is the sass tier on a GPU it supports (sm_90), the ptx tier on any other GPU,
    else the Triton interpreter; any other tier is itself."""
    if tier != "auto":
        return tier
    from .cuda import driver
    from .cuda.sass_session import supported
    try:
        driver.init()
    except GwatchError:
        return "interpreter"
    return "sass" if supported(driver.device_info(driver.current_device())) is None else "ptx"


def open_session(options: TraceOptions) -> TracingSession:
    """A session of the tier ``options`` asks for ("auto" already resolved)."""
    return TIERS[options.tier].open(options)
