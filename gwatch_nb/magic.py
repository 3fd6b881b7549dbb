"""The %%gwatch cell magic: trace the cell's matching kernel launches, then show them.

    %load_ext gwatch_nb
    %%gwatch -k ".*attn_fwd.*" -n 100=load_kv,101=dot_qk -o tr
    out = attention(q, k, v)

(``-s dot_qk`` records only that scope: the fewer scopes traced, the closer the kernel
runs to its untraced speed. On sm_90, ``-t sass`` puts the readings into the compiled
kernel itself, and ``-t sass --auto`` also traces every loop and blocking wait, markers
or none.)

The cell runs once, through the shell, exactly as it would without the magic (its
output, its variables, its last expression); the trace is stopped in a ``finally``, so
an exception or an interrupt in the cell leaves nothing switched on. The Trace is kept
in ``_gwatch`` (and the ``-o`` variable), the timeline widget displayed under the cell
in ``_gwatch_widget`` (``_gwatch_widget.selected`` is what was clicked). A cell whose
trace found nothing fails, and leaves no trace in those variables: a notebook run top
to bottom stops there instead of going on with an older trace."""
from __future__ import annotations

import time

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from . import api, tiers, triton_compat
from .notes import notes
from .errors import GwatchError, NoMatchingKernelError, OptionError, TraceFailedError
from .options import TraceOptions, tier_choices
from .scopes import chosen_scopes
from .trace import Trace

#: The magic's flag for each option of TraceOptions and do_trace.
FLAGS = {"kernel_name_pattern": "-k", "capacity": "-c", "launches": "-l", "scopes": "-s",
         "instrumentation_tier": "-t", "configs": "--configs", "baseline": "--baseline", "auto": "--auto",
         "stalls": "--stalls", "stall_period": "--stall-period"}
#: Names the magic sets in the user's namespace.
TRACE_VARIABLE, WIDGET_VARIABLE = "_gwatch", "_gwatch_widget"


def unquote(text: str | None) -> str | None:
    """IPython's option parser keeps the quotes around a value: -k ".*attn.*" arrives
    quoted, which no kernel name would match."""
    if text and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse_scope_names(text: str) -> dict[int, str]:
    """'100=load_kv,101=dot_qk' -> {100: 'load_kv', 101: 'dot_qk'}."""
    names = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isdigit() or not value.strip():
            raise UsageError(f"scope names look like 100=load_kv,101=dot_qk; cannot read {item!r}")
        names[int(key)] = value.strip()
    return names


def in_flags(text: str) -> str:
    """A message written for Python (``capacity=4``) as the magic's own words (``-c 4``)."""
    for option, flag in FLAGS.items():
        text = text.replace(f"{option}=", f"{flag} ")
    return text


class _Progress:
    """A status line that says which kernel is being instrumented (the first time can take
    a second), then how long it took."""

    def __init__(self):
        self.handle = None
        self.began = None

    def instrumenting(self, kernel: str) -> None:
        self.began = time.perf_counter()
        message = {"text/plain": f"gwatch: instrumenting {kernel} …"}
        if self.handle is None:
            self.handle = display(message, raw=True, display_id=True)
        else:
            self.handle.update(message, raw=True)

    def done(self) -> None:
        if self.handle is not None:
            seconds = time.perf_counter() - self.began
            self.handle.update({"text/plain": f"gwatch: instrumented in {seconds:.2f} s"}, raw=True)


@magics_class
class GwatchMagics(Magics):

    @magic_arguments()
    @argument("-k", "--kernel", required=True, help="regular expression for the kernel names to trace (re.search)")
    @argument("-n", "--names", default="", help="scope names, e.g. 100=load_kv,101=dot_qk")
    @argument("-o", "--output", help=f"also store the Trace in this variable (it is always in {TRACE_VARIABLE})")
    @argument("-c", "--capacity", type=int, help="events per warp (per program instance on the interpreter tier); "
              "default: sized from free GPU memory, all on the interpreter tier")
    @argument("-s", "--scopes", help="record only these scopes, by id or by name from --names, e.g. 101,dot_pv "
              "(the others cost nothing)")
    @argument("-l", "--launches", default="all", help="which matching launches to trace: first, all, or N")
    @argument("-t", "--tier", default="auto", choices=list(tier_choices()), help=tiers.help_text())
    @argument("--auto", action="store_true", help="with -t sass: also trace the automatic sites (every loop's "
              "iterations, every blocking wait), beside the markers or in kernels that have none")
    @argument("--stalls", action="store_true", help="with the sass tier: also sample why each traced launch's "
              "warps stalled, per scope (trace.stalls; the charts and the report show it)")
    @argument("--stall-period", type=int, help="with --stalls: sample each SM every 2^N cycles (default: CUPTI's "
              "for the GPU)")
    @argument("--configs", action="store_true", help="an autotuned kernel: trace one launch of each config the "
              "autotuner tries (it benchmarks again) and show the comparison across them, the chosen one marked")
    @argument("--baseline", type=int, default=0, help="replay the first traced launch N times untraced to measure "
              "what tracing cost (only for kernels that do not write their own inputs)")
    @argument("--no-widget", action="store_true", help=f"do not display the timeline (kept in {WIDGET_VARIABLE}) "
              "and charts")
    @cell_magic
    def gwatch(self, line: str, cell: str):
        """Trace when each scope of the matching kernels ran on every warp."""
        args = parse_argstring(self.gwatch, line)
        args.kernel, args.names, args.output, args.scopes = (unquote(args.kernel), unquote(args.names),
                                                              unquote(args.output), unquote(args.scopes))
        names = parse_scope_names(args.names)
        if args.output is not None and not args.output.isidentifier():
            raise UsageError(f"-o needs a variable name, got {args.output!r}")
        progress = _Progress()
        try:
            scopes = None if args.scopes is None else chosen_scopes(
                [part for part in args.scopes.split(",") if part.strip()], names)
            options = TraceOptions(args.kernel, args.tier, args.capacity, args.launches, scopes, args.configs,
                                   args.baseline, args.auto, stalls=args.stalls, stall_period=args.stall_period,
                                   on_instrument=progress.instrumenting)
            session = api.start(options)
        except OptionError as error:
            typed = {"scopes": args.scopes, "launches": args.launches, "kernel_name_pattern": args.kernel,
                     "auto": "", "stalls": ""}  # a flag: its name says it all
            raise UsageError(error.spelled(FLAGS, typed)) from None  # nothing ran: the cell must not half-run
        except GwatchError as error:
            raise UsageError(in_flags(str(error))) from None
        # A cell that traces nothing must leave no older trace behind (only traces and the
        # widget go: -o naming a variable of the user's own keeps it until a trace replaces it).
        self.shell.user_ns.pop(WIDGET_VARIABLE, None)
        for name in (TRACE_VARIABLE, args.output):
            if isinstance(self.shell.user_ns.get(name), Trace):
                del self.shell.user_ns[name]
        try:
            result = self.shell.run_cell(cell)
        finally:
            session.stop()
        progress.done()
        if session.interrupted:
            raise KeyboardInterrupt
        if not result.success:
            # The shell has shown the traceback; fail this cell too (one line, no second traceback).
            error = result.error_before_exec or result.error_in_exec
            if tiers.TIERS[session.tier].host_clock and triton_compat.is_missing_gpu_driver(error):
                raise UsageError("there is no GPU here, so the trace ran on the interpreter tier, but the kernel "
                                 "was compiled for a GPU: set TRITON_INTERPRET=1 before triton is imported "
                                 "(os.environ['TRITON_INTERPRET'] = '1' in the first cell, after restarting the "
                                 "kernel), then run the cells again")
            raise UsageError(f"the cell raised {type(error).__name__}; the trace was stopped and discarded")
        try:
            trace = api.finish(session, names)
            comparison = api.sweep_comparison(trace) if args.configs else None
        except (NoMatchingKernelError, TraceFailedError) as error:
            raise UsageError(in_flags(f"gwatch: {error}")) from None
        self.shell.user_ns[TRACE_VARIABLE] = comparison or trace
        if args.output:
            self.shell.user_ns[args.output] = comparison or trace
        self._report(trace, args.no_widget or comparison is not None)
        if comparison is not None:
            print("gwatch: configs compared: " + "; ".join(comparison.labels))
            if not args.no_widget:
                display(comparison)

    def _report(self, trace, no_widget: bool) -> None:
        launches = trace.launches
        print(f"gwatch: {len(launches)} launch(es) of {', '.join(sorted(set(launches.kernel)))}, "
              f"{int(launches.scope_instances.sum()):,} scope instances on {int(launches.warps.sum()):,} warps "
              f"({trace.meta['time_source']})")
        for line in notes(trace):
            print(f"gwatch: {line}")
        for warning in trace.warnings:
            print(in_flags(f"gwatch warning: {warning}"))
        if not no_widget:
            widget = trace.widget()
            self.shell.user_ns[WIDGET_VARIABLE] = widget
            display(widget)
            display(trace.charts())
