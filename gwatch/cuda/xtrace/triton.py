"""``gwatch.cuda.xtrace.triton``: the older name of ``gwatch.cuda.trace.triton``."""
from gwatch.cuda.trace.triton import MarkerError, scope_end, scope_start

__all__ = ["scope_start", "scope_end", "MarkerError"]
