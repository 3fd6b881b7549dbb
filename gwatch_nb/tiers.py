"""The tracing tiers, and the one protocol each tier's session implements.

A tier is a way of making the markers of matching kernels record: ``ptx`` swaps the
matching launches for copies instrumented in their PTX (cuda/session.py); ``sass`` swaps
them for the very cubin Triton loaded with clock readings spliced into its scheduled code
(cuda/sass_session.py); ``interpreter`` records host time under TRITON_INTERPRET=1
(interpreter.py). A new tier is a class
implementing ``TracingSession`` and one entry in ``TIERS``: every other module knows a
tier only through its ``Tier`` record (``of(trace)`` finds a trace's), never by its name.
The names are what trace files store in ``meta["tier"]``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, runtime_checkable

from .errors import GwatchError
from .options import TraceOptions
from .records import LaunchRecords


@dataclass(frozen=True)
class Problem:
    """Something a session met that kept a launch from being traced as asked; ``kind``
    is one of SESSION_PROBLEMS, ``message`` one line naming the kernel."""
    kind: str
    kernel: str
    message: str

    def __post_init__(self):
        if self.kind not in SESSION_PROBLEMS:
            raise ValueError(f"unknown session problem kind {self.kind!r}")


#: Kinds of session problems (they become Trace.warnings of the same kind); the kinds of
#: marker problems the decoder finds are records.MARKER_PROBLEMS.
SESSION_PROBLEMS = {
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
    "sites_miscounted": "the compiler copied, unrolled or moved a scope's code, so the sass tier's readings of it run "
                        "other than its markers (tier 'auto' traces such a kernel on the ptx tier)",
    "sass_fallback": "the sass tier could not instrument it soundly; tier 'auto' traced it on the ptx tier instead",
    "stalls_not_sampled": "traced on the ptx tier, whose rebuilt code does not map back to the kernel's instructions; "
                          "its stall reasons were not sampled",
    "stalls_unavailable": "CUPTI would not sample PCs on this GPU or driver; the trace went on without stall reasons",
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
    #: What Trace.meta["tier"] and trace files say.
    name: str
    open: Callable[[TraceOptions], TracingSession]
    #: What the tier does, in a few words (the magic's and do_trace's help are made of these).
    help: str
    #: What its times are (Trace.meta["time_source"]).
    time_source: str
    #: Its kernels run on the host and its readings are host nanoseconds, not SM clock cycles.
    host_clock: bool = False
    #: It reads the clock at sites in the compiled kernel (Trace.sites; automatic scopes).
    has_sites: bool = False
    #: Under tier "auto", it hands each kernel it cannot trace soundly to the ptx tier.
    falls_back: bool = False
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


TIERS = {tier.name: tier for tier in (
    Tier("ptx", _ptx, "on the GPU, readings in the PTX",
         time_source="GPU: SM clock cycles, mapped per warp to %globaltimer nanoseconds"),
    Tier("sass", _sass, "readings spliced into the compiled kernel (sm_90 only)",
         time_source="GPU: SM clock cycles read by probes in the compiled kernel (after ptxas), each just before "
                     "the instruction its site names, mapped per warp to %globaltimer nanoseconds",
         has_sites=True, falls_back=True),
    Tier("interpreter", _interpreter, "host time under TRITON_INTERPRET=1",
         time_source="interpreter host time (TRITON_INTERPRET=1): host nanoseconds per program instance, "
                     "not GPU time",
         host_clock=True,
         nothing_launched_hint=" (on the interpreter tier, set TRITON_INTERPRET=1 before the kernels are defined)"),
)}
#: What "auto" chooses (resolve below).
AUTO_HELP = ("sass on an sm_90 GPU (ptx for each kernel the sass tier cannot trace soundly), ptx on another GPU, "
             "else interpreter")


def of(trace) -> Tier:
    """The tier that recorded ``trace`` (its meta["tier"])."""
    return TIERS[trace.meta["tier"]]


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
