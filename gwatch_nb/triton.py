"""Scope markers for Triton kernels.

Inside ``@triton.jit`` code, ``scope_start(id)`` / ``scope_end(id)`` compile to a PTX
comment (a sentinel) that the tracer rewrites into a timestamped record; with no trace
active the comment costs nothing at run time. Under ``TRITON_INTERPRET=1`` the same
calls record host timestamps per program instance (the interpreter tier).
"""
from __future__ import annotations

import inspect

from triton.language import core

from . import interpreter
from .layout import MAX_SCOPE_ID

__all__ = ["scope_start", "scope_end", "MarkerError"]


class MarkerError(ValueError):
    """A scope marker was given something other than a compile-time id in range."""


def _scope_id(value) -> int:
    value = core._unwrap_if_constexpr(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MarkerError(
            f"gwatch scope id must be a compile-time integer (a literal or tl.constexpr), got {value!r}")
    if not 0 <= value <= MAX_SCOPE_ID:
        raise MarkerError(f"gwatch scope id must be in [0, {MAX_SCOPE_ID}], got {value}")
    return value


def _sentinel(kind: str, scope_id: int, _semantic, _builder):
    # The asm must produce a value (Triton requires one); ptxas drops the unused mov.
    # is_pure=False keeps the marker where it was written in program order.
    asm = f"// gwatch.scope_{kind} {scope_id}\n\tmov.u32 $0, 0;"
    context = {"_semantic": _semantic} if _semantic is not None else {"_builder": _builder}
    return core.inline_asm_elementwise(asm, "=r", [], dtype=core.int32, is_pure=False, pack=1, **context)


def _marker(kind: str):
    is_end = kind == "end"

    def marker(scope_id, _semantic=None, _builder=None):
        sid = _scope_id(scope_id)
        if _semantic is None and _builder is None:
            # Called by the interpreter (it passes no compiler context to our builtin).
            interpreter.record(sid, is_end)
            return None
        return _sentinel(kind, sid, _semantic, _builder)

    marker.__name__ = marker.__qualname__ = f"scope_{kind}"
    marker.__doc__ = f"Mark the {kind} of scope ``scope_id`` (a compile-time int in [0, {MAX_SCOPE_ID}])."
    # Mark it a Triton builtin: the code generator then calls it with its compiler context.
    setattr(marker, core.TRITON_BUILTIN, True)
    marker.signature = inspect.signature(marker)
    return marker


scope_start = _marker("start")
scope_end = _marker("end")
