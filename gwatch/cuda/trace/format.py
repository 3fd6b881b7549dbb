"""``gwatch.cuda.trace.format``: the report section holding intra-kernel trace runs."""
from gwatch_nb.report import Section

#: A titled group of traced runs; ``add_run(trace)`` adds the Trace that do_trace returned.
Section_IntraKernelTrace = Section

__all__ = ["Section_IntraKernelTrace"]
