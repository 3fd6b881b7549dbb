"""Scope markers for Triton kernels.

Inside ``@triton.jit`` code, ``scope_start(id)`` / ``scope_end(id)`` compile to nothing by
default: the kernel Triton builds and runs is the one it would be without them, instruction
for instruction, whether or not a trace is active. The sass tier reads the markers from the
kernel's Python source and places their readings in that very kernel. The ptx tier, which
rewrites markers found in the PTX, compiles its own copy of a kernel with each marker as a
PTX comment (a sentinel), cached apart (``sentinels()`` here, gwatch_nb/sentinels.py).
``GWATCH_MARKERS=sentinel`` in the environment before this module is imported makes every
compile leave the sentinels (its Triton cache then goes to a directory of its own too, so
that kernels compiled with and without them never stand in for each other). Under
``TRITON_INTERPRET=1`` the same calls record host timestamps per program instance (the
interpreter tier).
"""
from __future__ import annotations

import contextlib
import os
import threading

from . import interpreter, triton_compat
from ._native import FORMAT
from .layout import MAX_SCOPE_ID

#: What markers compile to, from GWATCH_MARKERS: "none" (nothing, unless within sentinels())
#: or "sentinel" (the PTX comment, always).
MARKER_MODES = ("none", "sentinel")
MARKERS = os.environ.get("GWATCH_MARKERS", "none")
if MARKERS not in MARKER_MODES:
    raise ValueError(f"GWATCH_MARKERS={MARKERS!r} is not one of {', '.join(MARKER_MODES)}")
if MARKERS == "sentinel" and "TRITON_CACHE_DIR" not in os.environ:
    os.environ["TRITON_CACHE_DIR"] = os.path.join(os.path.expanduser("~"), ".triton", "cache-gwatch-sentinels")

_forced = threading.local()  # within sentinels() in this thread: markers leave their sentinels
#: Where kernels compiled within sentinels() are cached, under Triton's cache directory:
#: Triton's cache key does not know whether the markers left sentinels.
SENTINEL_CACHE_FOLDER = "gwatch-sentinels"


@contextlib.contextmanager
def sentinels():
    """Within it, kernels this thread compiles keep their markers as PTX sentinels, whatever
    GWATCH_MARKERS says, cached apart from those whose markers compiled to nothing."""
    from triton import knobs
    depth = getattr(_forced, "depth", 0)
    # Triton's cache directory is the process's: a build another thread makes meanwhile lands
    # in this folder too, and sentinels.py refuses a copy that came back without sentinels.
    with knobs.cache.scope():
        if MARKERS != "sentinel" and depth == 0:
            knobs.cache.dir = os.path.join(knobs.cache.dir, SENTINEL_CACHE_FOLDER)
        _forced.depth = depth + 1
        try:
            yield
        finally:
            _forced.depth = depth


def leaves_sentinels() -> bool:
    """Whether a marker compiled now leaves its sentinel in the PTX."""
    return MARKERS == "sentinel" or getattr(_forced, "depth", 0) > 0

__all__ = ["scope_start", "scope_end", "MarkerError"]

#: The comment each marker leaves in the PTX, before its scope id (native/gwatch_format.h).
MARKER_TEXT = {"start": FORMAT["MARKER_START"], "end": FORMAT["MARKER_END"]}


class MarkerError(ValueError):
    """A scope marker was given something other than a compile-time id in range."""


def _scope_id(value) -> int:
    value = triton_compat.constexpr_value(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MarkerError(
            f"gwatch scope id must be a compile-time integer (a literal or tl.constexpr), got {value!r}")
    if not 0 <= value <= MAX_SCOPE_ID:
        raise MarkerError(f"gwatch scope id must be in [0, {MAX_SCOPE_ID}], got {value}")
    return value


def _marker(kind: str):
    is_end = kind == "end"

    def marker(scope_id, _semantic=None, _builder=None):
        sid = _scope_id(scope_id)
        context = triton_compat.compile_context(_semantic, _builder)
        if context is None:
            # Called by the interpreter (it passes no compiler context to our builtin).
            interpreter.record(sid, is_end)
            return None
        if not leaves_sentinels():
            return None
        # The asm must produce a value; ptxas drops the unused mov.
        return triton_compat.inline_asm(f"{MARKER_TEXT[kind]} {sid}\n\tmov.u32 $0, 0;", context)

    marker.__name__ = marker.__qualname__ = f"scope_{kind}"
    marker.__doc__ = f"Mark the {kind} of scope ``scope_id`` (a compile-time int in [0, {MAX_SCOPE_ID}])."
    return triton_compat.builtin(marker)


scope_start = _marker("start")
scope_end = _marker("end")
