"""gwatch-nb: when each marked region of a Triton kernel ran, on every warp of every SM."""
from ._version import __version__
from .api import do_trace
from .errors import (ArchiveError, CuptiBusyError, CuptiUnavailableError, GwatchError, GwatchWarning,
                     NoGPUError, NoMatchingKernelError, TraceFailedError)
from .report import load, load_report
from .trace import Trace, TraceWarning

__all__ = [
    "__version__", "do_trace", "load", "load_report", "Trace", "TraceWarning", "GwatchError", "GwatchWarning",
    "NoGPUError", "CuptiUnavailableError", "CuptiBusyError", "NoMatchingKernelError", "TraceFailedError",
    "ArchiveError",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext gwatch_nb`` registers the ``%%gwatch`` cell magic."""
    from .magic import GwatchMagics
    ipython.register_magics(GwatchMagics)
