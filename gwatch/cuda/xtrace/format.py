"""``gwatch.cuda.xtrace.format``: the older name of ``gwatch.cuda.trace.format``."""
from gwatch.cuda.trace.format import Section_IntraKernelTrace

__all__ = ["Section_IntraKernelTrace"]
