"""``gwatch.cuda.trace.triton``: scope markers for @triton.jit kernels (gwatch_nb.triton)."""
from gwatch_nb.triton import MarkerError, scope_end, scope_start

__all__ = ["scope_start", "scope_end", "MarkerError"]
