"""The %%gwatch cell magic: trace the cell's matching kernel launches, then show them.

    %load_ext gwatch_nb
    %%gwatch -k ".*attn_fwd.*" -n 100=load_kv,101=dot_qk -o tr
    out = attention(q, k, v)

(``-s dot_qk`` records only that scope: the fewer scopes traced, the closer the kernel
runs to its untraced speed.)

The cell runs once, through the shell, exactly as it would without the magic (its
output, its variables, its last expression); the trace is stopped in a ``finally``, so
an exception or an interrupt in the cell leaves nothing switched on."""
from __future__ import annotations

import time

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from . import api
from .errors import GwatchError, NoMatchingKernelError, TraceFailedError
from .scopes import chosen_scopes


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


def resolve_tier(tier: str) -> str:
    """'auto' means the GPU when there is one, else the Triton interpreter."""
    if tier != "auto":
        return tier
    from .cuda import driver
    try:
        driver.init()
        return "ptx"
    except GwatchError:
        return "interpreter"


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
    @argument("-o", "--output", help="also store the Trace in this variable (it is always in _gwatch)")
    @argument("-c", "--capacity", type=int, help="events per warp (default: sized from free GPU memory)")
    @argument("-s", "--scopes", help="record only these scopes, by id or by name from --names, e.g. 101,dot_pv "
              "(the others cost nothing)")
    @argument("-l", "--launches", default="all", help="which matching launches to trace: first, all, or N")
    @argument("-t", "--tier", default="auto", choices=["auto", "ptx", "interpreter"],
              help="ptx: on the GPU; interpreter: host time under TRITON_INTERPRET=1; auto: the GPU if there is one")
    @argument("--no-widget", action="store_true", help="do not display the timeline and charts")
    @cell_magic
    def gwatch(self, line: str, cell: str):
        """Trace when each scope of the matching kernels ran on every warp."""
        args = parse_argstring(self.gwatch, line)
        args.kernel, args.names, args.output = unquote(args.kernel), unquote(args.names), unquote(args.output)
        names = parse_scope_names(args.names)
        if args.output is not None and not args.output.isidentifier():
            raise UsageError(f"-o needs a variable name, got {args.output!r}")
        progress = _Progress()
        try:
            scopes = None if args.scopes is None else chosen_scopes(
                [part for part in unquote(args.scopes).split(",") if part.strip()], names)
            session = api.start(args.kernel, "triton", resolve_tier(args.tier), args.capacity, args.launches,
                                on_instrument=progress.instrumenting, scopes=scopes)
        except (GwatchError, ValueError) as error:
            raise UsageError(str(error)) from None  # nothing ran: the cell must not half-run
        try:
            result = self.shell.run_cell(cell)
        finally:
            session.stop()
        progress.done()
        if not result.success:
            # The shell has shown the traceback; fail this cell too (one line, no second traceback).
            error = result.error_before_exec or result.error_in_exec
            raise UsageError(f"the cell raised {type(error).__name__}; the trace was stopped and discarded")
        try:
            trace = api.finish(session, names)
        except (NoMatchingKernelError, TraceFailedError) as error:
            print(f"gwatch: {error}")
            return
        self.shell.user_ns["_gwatch"] = trace
        if args.output:
            self.shell.user_ns[args.output] = trace
        self._report(trace, args.no_widget)

    @staticmethod
    def _report(trace, no_widget: bool) -> None:
        launches = trace.launches
        print(f"gwatch: {len(launches)} launch(es) of {', '.join(sorted(set(launches.kernel)))}, "
              f"{int(launches.scope_instances.sum()):,} scope instances on {int(launches.warps.sum()):,} warps "
              f"({trace.meta['time_source']})")
        for message in trace.meta["problems"] + [str(w) for w in trace.warnings]:
            print(f"gwatch warning: {message}")
        if not no_widget:
            display(trace.widget())
            display(trace.charts())
