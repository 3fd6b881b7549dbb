"""Scope markers for Triton kernels.

Inside ``@triton.jit`` code, ``scope_start(id)`` / ``scope_end(id)`` compile to a PTX
comment (a sentinel) that the ptx tier rewrites into a timestamped record; with no trace
active the comment costs nothing at run time, though in some kernels (pipelined persistent
loops) its inline assembly still changes what Triton generates. With ``GWATCH_MARKERS=none``
in the environment before this module is imported, the markers compile to nothing at all:
the kernel is the one it would be without them, and the sass tier, which reads the markers
from the kernel's Python source, still traces their scopes (the ptx tier then has none to
trace). Triton's on-disk cache then goes to its own directory, so that kernels compiled with
and without markers never stand in for each other. Under ``TRITON_INTERPRET=1`` the same
calls record host timestamps per program instance (the interpreter tier).
"""
from __future__ import annotations

import os

from . import interpreter, triton_compat
from ._native import FORMAT
from .layout import MAX_SCOPE_ID

#: What markers compile to: "sentinel" (the PTX comment) or "none" (nothing), from GWATCH_MARKERS.
MARKER_MODES = ("sentinel", "none")
MARKERS = os.environ.get("GWATCH_MARKERS", "sentinel")
if MARKERS not in MARKER_MODES:
    raise ValueError(f"GWATCH_MARKERS={MARKERS!r} is not one of {', '.join(MARKER_MODES)}")
if MARKERS == "none" and "TRITON_CACHE_DIR" not in os.environ:
    os.environ["TRITON_CACHE_DIR"] = os.path.join(os.path.expanduser("~"), ".triton", "cache-gwatch-markers-none")

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
        if MARKERS == "none":
            return None
        # The asm must produce a value; ptxas drops the unused mov.
        return triton_compat.inline_asm(f"{MARKER_TEXT[kind]} {sid}\n\tmov.u32 $0, 0;", context)

    marker.__name__ = marker.__qualname__ = f"scope_{kind}"
    marker.__doc__ = f"Mark the {kind} of scope ``scope_id`` (a compile-time int in [0, {MAX_SCOPE_ID}])."
    return triton_compat.builtin(marker)


scope_start = _marker("start")
scope_end = _marker("end")
