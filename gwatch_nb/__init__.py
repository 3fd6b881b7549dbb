"""gwatch-nb: when each marked region of a Triton kernel ran, on every warp of every SM."""
from ._version import __version__
from .api import do_trace, stalls
from .errors import (ArchiveError, CuptiBusyError, CuptiUnavailableError, GwatchError, GwatchWarning,
                     NoGPUError, NoMatchingKernelError, OptionError, TraceFailedError, UnsupportedGpuError,
                     UnsupportedTritonError)
from .report import load, load_report
from .trace import Trace, TraceWarning

#: Names whose modules need pandas, pyarrow or duckdb: imported when first asked for.
_LAZY = {"compare": ".comparison", "load_many": ".dataset", "query": ".dataset"}

__all__ = [
    "__version__", "do_trace", "stalls", "load", "load_report", "compare", "load_many", "query", "Trace",
    "TraceWarning",
    "GwatchError", "GwatchWarning", "NoGPUError", "CuptiUnavailableError", "CuptiBusyError", "NoMatchingKernelError",
    "TraceFailedError", "ArchiveError", "OptionError", "UnsupportedGpuError", "UnsupportedTritonError",
]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """``%load_ext gwatch_nb`` registers the ``%%gwatch`` cell magic."""
    from .magic import GwatchMagics
    ipython.register_magics(GwatchMagics)
