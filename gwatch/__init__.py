"""gwatch: the G-Watch names for gwatch-nb.

Code written for G-Watch's documented workflow runs unchanged on gwatch-nb::

    import gwatch.cuda.xtrace.triton as gw_trace   # gw_trace.scope_start(id) / scope_end(id) in @triton.jit
    import gwatch.libpygwatch as pygwatch
    from gwatch.cuda.xtrace import do_trace
    from gwatch.common.format import File
    from gwatch.cuda.xtrace.format import Section_IntraKernelTrace

Every name here is gwatch_nb's own object, re-exported; nothing is implemented twice."""
from gwatch_nb._version import __version__

__all__ = ["__version__"]
