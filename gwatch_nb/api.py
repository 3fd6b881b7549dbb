"""do_trace: run a function once and trace the matching kernel launches it makes."""
from __future__ import annotations

import datetime
import platform
import re
import warnings
from typing import Callable, Iterable, Mapping

from .errors import GwatchWarning, NoMatchingKernelError, TraceFailedError
from .scopes import chosen_scopes
from .trace import Trace

SUPPORTED_DSLS = ("triton",)
SUPPORTED_TIERS = ("ptx", "interpreter")


def parse_launches(launches) -> int | None:
    """'all' -> None (no limit), 'first' -> 1, a positive int -> that many."""
    if launches == "all" or launches is None:
        return None
    if launches == "first":
        return 1
    if isinstance(launches, int) and not isinstance(launches, bool) and launches > 0:
        return launches
    if isinstance(launches, str) and launches.isdigit() and int(launches) > 0:
        return int(launches)
    raise ValueError(f"launches must be 'first', 'all' or a positive integer, got {launches!r}")


def compile_pattern(kernel_name_pattern: str) -> re.Pattern:
    try:
        return re.compile(kernel_name_pattern)
    except (re.error, TypeError) as error:
        raise ValueError(f"kernel_name_pattern {kernel_name_pattern!r} is not a regular expression ({error})") \
            from None


def _check_choices(dsl: str, tier: str) -> None:
    if dsl not in SUPPORTED_DSLS:
        raise ValueError(f"dsl={dsl!r} is not supported; supported: {', '.join(SUPPORTED_DSLS)}")
    if tier not in SUPPORTED_TIERS:
        raise ValueError(f"instrumentation_tier={tier!r} is not supported; supported: {', '.join(SUPPORTED_TIERS)}")


def _meta(tier: str, pattern: re.Pattern, scopes: frozenset | None) -> dict:
    from ._version import __version__
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"tier": tier, "kernel_name_pattern": pattern.pattern,
            "scopes_traced": None if scopes is None else sorted(scopes), "gwatch_nb_version": __version__,
            "triton_version": triton_version, "host": platform.node(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def _describe_launched(launched: Mapping[str, int]) -> str:
    if not launched:
        return "no kernel launched at all"
    shown = sorted(launched.items(), key=lambda kv: -kv[1])[:12]
    more = f", and {len(launched) - len(shown)} more" if len(launched) > len(shown) else ""
    return "kernels that launched: " + ", ".join(f"{name} ({n}x)" for name, n in shown) + more


def do_trace(fn: Callable[[], object], kernel_name_pattern: str, dsl: str = "triton",
             scope_name_map: Mapping[int, str] | None = None, instrumentation_tier: str = "ptx",
             capacity: int | None = None, launches="all", scopes: Iterable[int | str] | None = None) -> Trace:
    """Run ``fn()`` once and trace every launch of a kernel whose name matches
    ``kernel_name_pattern`` (``re.search``).

    ``instrumentation_tier``: ``"ptx"`` traces on the GPU; ``"interpreter"`` records host
    time under ``TRITON_INTERPRET=1`` (no GPU needed). ``capacity``: events per warp
    (default: sized from free GPU memory). ``launches``: ``"all"``, ``"first"`` or N.
    ``scopes``: record only these scopes (ids, or names from ``scope_name_map``); the
    other markers stay idle and cost nothing, so the kernel runs closer to its own speed.

    Raises NoMatchingKernelError (listing what did launch) when nothing matched, and
    TraceFailedError when matching launches could not be traced."""
    session = start(kernel_name_pattern, dsl, instrumentation_tier, capacity, launches,
                    scopes=chosen_scopes(scopes, scope_name_map))
    try:
        fn()
    finally:
        session.stop()
    if getattr(session, "interrupted", False):
        raise KeyboardInterrupt
    trace = finish(session, scope_name_map)
    for message in trace.meta["problems"] + [str(w) for w in trace.warnings]:
        warnings.warn(message, GwatchWarning, stacklevel=2)
    return trace


def start(kernel_name_pattern: str, dsl: str = "triton", instrumentation_tier: str = "ptx",
          capacity: int | None = None, launches="all", on_instrument=None, scopes: frozenset | None = None):
    """Begin tracing (the first half of do_trace); raises before anything runs if tracing
    cannot work. ``on_instrument(kernel_name)`` is told before a kernel is instrumented;
    ``scopes``: the scope ids to record (``chosen_scopes``), None for all."""
    _check_choices(dsl, instrumentation_tier)
    pattern = compile_pattern(kernel_name_pattern)
    max_launches = parse_launches(launches)
    if instrumentation_tier == "interpreter":
        from .interpreter import InterpreterRecorder
        session = InterpreterRecorder(pattern, max_launches, scopes)
    else:
        from .cuda.session import TraceSession
        session = TraceSession(pattern, capacity, max_launches, on_instrument=on_instrument, scopes=scopes)
    session.tier = instrumentation_tier
    session.start()
    return session


def finish(session, scope_name_map: Mapping[int, str] | None = None) -> Trace:
    """The Trace of a stopped session (the second half of do_trace).

    Raises NoMatchingKernelError (listing what did launch) when nothing matched, and
    TraceFailedError when matching launches could not be traced."""
    records = session.records()
    problems = list(session.problems.values())
    if not records:
        if problems:
            raise TraceFailedError("; ".join(problems))
        hint = ""
        if session.tier == "interpreter" and not session.launched:
            hint = " (on the interpreter tier, set TRITON_INTERPRET=1 before the kernels are defined)"
        raise NoMatchingKernelError(f"no launched kernel matched {session.pattern.pattern!r}; "
                                    f"{_describe_launched(session.launched)}{hint}")
    trace = Trace(records, scope_name_map, _meta(session.tier, session.pattern, session.scopes))
    trace.meta["problems"] = problems
    return trace
