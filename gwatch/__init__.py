"""gwatch: the G-Watch names for gwatch-nb.

Code written for G-Watch's documented workflow runs unchanged on gwatch-nb::

    import gwatch.cuda.trace.triton as gw_trace    # gw_trace.scope_start(id) / scope_end(id) in @triton.jit
    import gwatch.libpygwatch as pygwatch
    from gwatch.cuda.trace import do_trace
    from gwatch.common.format import File
    from gwatch.cuda.trace.format import Section_IntraKernelTrace

(``gwatch.cuda.xtrace``, G-Watch's older spelling, names the same objects.) Every name
here is gwatch_nb's own object, re-exported; nothing is implemented twice.

PyPI's G-Watch is also called ``gwatch``: installed beside gwatch-nb, the two packages
hide one another, and importing this one warns (GwatchWarning) naming both."""
from gwatch._shadowing import warn_if_shadowing
from gwatch_nb._version import __version__

warn_if_shadowing(__file__)

__all__ = ["__version__"]
