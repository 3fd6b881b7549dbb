"""gwatch-nb: when each marked region of a Triton kernel ran, on every warp of every SM."""
__version__ = "0.1.0"

from .api import do_trace
from .archive import load
from .errors import (ArchiveError, CuptiBusyError, CuptiUnavailableError, GwatchError, GwatchWarning,
                     NoGPUError, NoMatchingKernelError, TraceFailedError)
from .trace import Trace, TraceWarning

__all__ = [
    "do_trace", "load", "Trace", "TraceWarning", "GwatchError", "GwatchWarning", "NoGPUError",
    "CuptiUnavailableError", "CuptiBusyError", "NoMatchingKernelError", "TraceFailedError", "ArchiveError",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext gwatch_nb`` registers the ``%%gwatch`` cell magic."""
    from .magic import GwatchMagics
    ipython.register_magics(GwatchMagics)
