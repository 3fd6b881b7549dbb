"""do_trace: run a function and trace the matching kernel launches it makes."""
from __future__ import annotations

import dataclasses
import datetime
import numbers
import platform
import warnings
from typing import Callable, Iterable, Mapping

from . import tiers
from .errors import GwatchWarning, NoMatchingKernelError, OptionError, TraceFailedError
from .options import STALLS_NEED_SASS, TraceOptions
from .scopes import chosen_scopes
from .trace import Trace

SUPPORTED_DSLS = ("triton",)
SUPPORTED_TIERS = tuple(tiers.TIERS)
_NOT_BENCHMARKED = ("configs=True: no autotuner benchmarked a kernel matching {!r} while fn ran (only "
                    "triton.autotune kernels with more than one config are benchmarked)")


def _check_dsl(dsl: str) -> None:
    if dsl not in SUPPORTED_DSLS:
        raise OptionError("dsl", dsl, f"is not supported; supported: {', '.join(SUPPORTED_DSLS)}")


def _runs(option: str, value, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise OptionError(option, value, f"must be an integer of at least {least} (runs of fn)")
    return int(value)


def _meta(session: tiers.TracingSession) -> dict:
    from . import triton_compat
    from ._version import __version__
    options = session.options
    return {"tier": session.tier, "kernel_name_pattern": options.pattern.pattern,
            "scopes_traced": None if options.scopes is None else sorted(options.scopes),
            "gwatch_nb_version": __version__, "triton_version": triton_compat.version(), "host": platform.node(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **session.meta()}


def _describe_launched(launched: Mapping[str, int]) -> str:
    if not launched:
        return "no kernel launched at all"
    shown = sorted(launched.items(), key=lambda kv: -kv[1])[:12]
    more = f", and {len(launched) - len(shown)} more" if len(launched) > len(shown) else ""
    return "kernels that launched: " + ", ".join(f"{name} ({n}x)" for name, n in shown) + more


def do_trace(fn: Callable[[], object], kernel_name_pattern: str, dsl: str = "triton",
             scope_name_map: Mapping[int, str] | None = None, instrumentation_tier: str = "ptx",
             capacity: int | None = None, launches="all", scopes: Iterable[int | str] | None = None, *,
             warmup: int = 0, rep: int = 1, dump_path=None, configs: bool = False, baseline: int = 0,
             auto: bool = False, stalls: bool = False, stall_period: int | None = None):
    """Run ``fn()`` and trace every launch of a kernel whose name matches
    ``kernel_name_pattern`` (``re.search``).

    ``instrumentation_tier``: ``"ptx"`` traces on the GPU with readings in the PTX;
    ``"sass"`` (sm_90 only) splices the readings into the compiled kernel itself, so the
    kernel runs as it does untraced plus the readings (``trace.sites`` says where each
    went; a reading no registers are free for is left out with its pair, and
    ``trace.meta["sass"]`` names it); ``"interpreter"`` records host time under
    ``TRITON_INTERPRET=1`` (no GPU needed); ``"auto"`` is the sass tier on an sm_90 GPU
    (each kernel it cannot instrument soundly traced on the ptx tier instead, with a
    ``sass_fallback`` warning; ``trace.launches["tier"]`` says which tier traced each launch),
    the ptx tier on another GPU, else the interpreter. ``auto=True`` (only with
    ``instrumentation_tier="sass"``) also traces the automatic sites, beside the markers or
    in kernels that have none: every loop's iterations and every blocking wait (mbarrier,
    wgmma, barrier, async copy), each a scope of its own named like
    ``"loop attention.py:37"`` (ids from 28672, ``sass.instrument.AUTO_SCOPE_BASE``, up;
    each warp's whole life is in ``trace.warps``). ``capacity``: events per warp (default: sized from free
    GPU memory). ``launches``: ``"all"``, ``"first"`` or N. ``scopes``: record only these
    scopes (ids, or names from ``scope_name_map``); the other markers stay idle and cost
    nothing, so the kernel runs closer to its own speed. ``warmup``: runs of ``fn``
    before tracing (compiling, autotuning, caches), untraced; ``rep``: runs of ``fn``
    while tracing (each run's matching launches are traced, up to ``launches``).
    ``dump_path``: also save the Trace there (the ``.json`` archive ``gwatch show`` and
    ``gwatch_nb.load`` read, whatever the extension). ``stalls=True`` (sass tier) also samples
    why each traced launch's warps stalled, charged to the scopes (``trace.stalls``);
    ``stall_period=N`` samples each SM every 2^N cycles (default: CUPTI's for the GPU).

    Launches an autotuner (``triton.autotune``) makes while it benchmarks its configs run
    untraced: the trace holds the user's own launches, with the chosen config
    (``trace.meta["autotune"]`` says what was left out). ``configs=True`` instead makes
    the autotuner benchmark again (its cached choices are forgotten) and traces one
    launch of each config it tries (``launches`` does not apply; ``dump_path`` saves that
    whole Trace); the result is then ``gwatch_nb.compare`` across them
    (``sweep_comparison``), the chosen config first and marked. ``baseline=N`` replays
    the first traced launch of each kernel N times untraced to measure what tracing cost
    (``trace.overhead``); only for kernels whose launches may be repeated, that is,
    kernels that do not write their own inputs. Without it the cost is measured from
    untraced launches fn makes of the same kernel and config (beyond ``launches``, or
    the autotuner's benchmark launches), where there are any.

    Raises OptionError for a bad option (``auto=True`` on a tier other than sass
    included) and UnsupportedGpuError for the sass tier on a GPU other than sm_90, both
    before ``fn`` runs; NoMatchingKernelError (listing what did launch) when nothing
    matched, and TraceFailedError when matching launches could not be traced."""
    _check_dsl(dsl)
    warmup, rep = _runs("warmup", warmup, 0), _runs("rep", rep, 1)
    options = TraceOptions(kernel_name_pattern, instrumentation_tier, capacity, launches,
                           chosen_scopes(scopes, scope_name_map), configs, baseline, auto, stalls=stalls,
                           stall_period=stall_period)
    for _ in range(warmup):
        fn()
    session = start(options)
    try:
        for _ in range(rep):
            fn()
    finally:
        session.stop()
    if session.interrupted:
        raise KeyboardInterrupt
    trace = finish(session, scope_name_map)
    for warning in trace.warnings:
        warnings.warn(str(warning), GwatchWarning, stacklevel=2)
    if dump_path is not None:
        trace.save(dump_path)
    return sweep_comparison(trace) if configs else trace


def stalls(fn: Callable[[], object], kernel_name_pattern: str, scope_name_map: Mapping[int, str] | None = None, *,
           period: int | None = None, warmup: int = 0, rep: int = 1):
    """Run ``fn()`` untraced and sample why the warps of every launch of a kernel matching
    ``kernel_name_pattern`` stalled: the kernel as the user runs it, no probe in it. Each
    launch is sampled on its own (the GPU is synchronized around it); every 2^``period``
    cycles each SM notes one warp's instruction and stall reason (None: CUPTI's default for
    the GPU). The samples are charged to the scopes whose markers hold their instructions
    (a kernel with no markers, or not Triton's: every sample "outside scopes").

    Returns trace.stalls' DataFrame (kernel, scope, name, reason, samples, share,
    not_issued); ``.attrs["stalls"]`` holds the period, how it was chosen and per kernel the
    launches, the samples kept and CUPTI's total and dropped counts. Raises
    NoMatchingKernelError when nothing matched and CuptiUnavailableError where the GPU or
    driver does not allow PC sampling."""
    from .cuda.stall_session import StallSession
    from .options import check_stalls, kernel_pattern
    from .stall_reasons import frame
    check_stalls(True, period)
    warmup, rep = _runs("warmup", warmup, 0), _runs("rep", rep, 1)
    pattern = kernel_pattern(kernel_name_pattern)
    for _ in range(warmup):
        fn()
    session = StallSession(pattern, period)
    session.start()
    try:
        for _ in range(rep):
            fn()
    finally:
        session.stop()
    meta = session.samples()
    if meta is None:
        raise NoMatchingKernelError(f"no launched kernel matched {pattern.pattern!r}; "
                                    f"{_describe_launched(session.launched)}")
    names = {int(k): str(v) for k, v in (scope_name_map or {}).items()}
    table = frame(meta, lambda scope: names.get(scope, str(scope)))
    table.attrs["stalls"] = {k: v for k, v in meta.items() if k != "rows"}
    return table


def start(options: TraceOptions) -> tiers.TracingSession:
    """Begin tracing (the first half of do_trace): the tier ("auto" decided here) opens
    its session; raises before anything runs if tracing cannot work."""
    tier = tiers.resolve(options.tier)
    if options.auto and not tiers.TIERS[tier].has_sites:
        raise OptionError("auto", True, f"needs instrumentation_tier='sass', which this machine cannot trace on "
                                        f"(instrumentation_tier='auto' chose {tier!r}: the sass tier needs an sm_90 "
                                        "GPU)")
    if options.stalls and not tiers.TIERS[tier].has_sites:
        raise OptionError("stalls", True, f"{STALLS_NEED_SASS}; instrumentation_tier='auto' chose {tier!r}")
    # "auto" on an sm_90 GPU: the sass tier, and per kernel the ptx tier where the sass tier cannot trace it soundly.
    fallback = options.tier == "auto" and tiers.TIERS[tier].falls_back
    options = dataclasses.replace(options, tier=tier, fallback=fallback)
    session = tiers.open_session(options)
    session.start()
    return session


def finish(session: tiers.TracingSession, scope_name_map: Mapping[int, str] | None = None) -> Trace:
    """The Trace of a stopped session (the second half of do_trace); the session's
    problems become its warnings (``meta["problems"]``).

    Raises NoMatchingKernelError (listing what did launch) when nothing matched, and
    TraceFailedError when matching launches could not be traced."""
    records = session.records()
    problems = session.problems()
    if not records:
        if problems:
            raise TraceFailedError("; ".join(p.message for p in problems), problems[0].kind)
        if session.options.configs and any(session.options.pattern.search(k) for k in session.launched):
            raise NoMatchingKernelError(_NOT_BENCHMARKED.format(session.options.pattern.pattern))
        hint = "" if session.launched else tiers.TIERS[session.tier].nothing_launched_hint
        raise NoMatchingKernelError(f"no launched kernel matched {session.options.pattern.pattern!r}; "
                                    f"{_describe_launched(session.launched)}{hint}")
    meta = _meta(session)
    meta["problems"] = [dataclasses.asdict(p) for p in problems]
    names = {int(k): v for k, v in meta.get("scope_names", {}).items()}  # the automatic sites' scopes
    return Trace(records, {**names, **(scope_name_map or {})}, meta)


def sweep_comparison(trace: Trace):
    """A ``configs=True`` trace as ``gwatch_nb.compare`` across its configs: one run per
    config (labelled by it), the autotuner's chosen one first and marked "(chosen)"; the
    whole trace stays reachable as ``.sweep``. Raises NoMatchingKernelError when no
    autotuner benchmarked two configs or more of a matching kernel."""
    from .comparison import compare
    launches = trace.launches
    tuned = trace.meta.get("autotune", {})
    if "autotune" not in launches or not (launches["autotune"] == "benchmark").any():
        raise NoMatchingKernelError(_NOT_BENCHMARKED.format(trace.meta["kernel_name_pattern"]))
    chosen = {entry["chosen"] for entry in tuned.values()}
    runs = []
    for label in dict.fromkeys(launches["config"]):
        rows = launches.index[launches["config"] == label]
        picked = _is_chosen(trace.records[rows[0]].info["config"], chosen)
        runs.append((picked, f"{label} (chosen)" if picked else label,
                     Trace([trace.records[i] for i in rows], trace.scope_names, trace.meta)))
    if len(runs) < 2:
        raise NoMatchingKernelError(f"configs=True: only one config of {', '.join(tuned) or 'the kernel'} was traced; "
                                    f"nothing to compare")
    runs.sort(key=lambda run: not run[0])
    comparison = compare(*[run[2] for run in runs], labels=[run[1] for run in runs])
    comparison.sweep = trace
    return comparison


def _is_chosen(config: dict, chosen_labels: set) -> bool:
    """Whether a launch's configuration is the autotuner's choice (whose label names only
    what the autotuner's Config sets)."""
    from . import launch_config
    return any(all(part in launch_config.label(config).split() for part in label.split())
               for label in chosen_labels if label)
