"""Kernels compiled again with their markers as PTX sentinels, for what needs them: the ptx
tier rewrites the sentinels into clock readings, and the sass tier checks its readings'
counts against where they sit in the PTX. The kernel a user runs has none (markers compile
to nothing, gwatch_nb/triton.py), so its idle cost is nothing; this copy is built once per
process (Triton caches it apart on disk) and only its PTX is used."""
from __future__ import annotations

import dataclasses
import threading

from . import triton_compat
from ._native import FORMAT
from .errors import SassRewriteError, TraceFailedError
from .sass import markers as marker_sources
from .sources import KernelSource
from .triton import sentinels

#: What a launch of the kernel fixes: the copy's must be the kernel's own.
LAUNCH_KEYS = ("num_warps", "num_ctas", "shared", "global_scratch_size")

_lock = threading.Lock()
_ptx: dict[str, str | None] = {}  # digest of the kernel's own PTX -> the PTX with sentinels (None: no markers)


def has_sentinels(ptx: str) -> bool:
    return FORMAT["MARKER_START"] in ptx or FORMAT["MARKER_END"] in ptx


def ensure(source: KernelSource) -> KernelSource:
    """``source`` with the PTX of its markers as sentinels: itself where its PTX has them or its
    source writes none (or is not known); raises TraceFailedError when Triton cannot build
    the copy."""
    if has_sentinels(source.ptx) or source.function is None or source.compiled_from is None:
        return source
    with _lock:
        if source.digest not in _ptx:
            _ptx[source.digest] = _compile(source) if _writes_markers(source.function) else None
        ptx = _ptx[source.digest]
    return source if ptx is None else dataclasses.replace(source, ptx=ptx, loaded_ptx=source.ptx)


def _writes_markers(function) -> bool:
    try:
        return bool(marker_sources.from_source(function))
    except SassRewriteError:
        return False


def _compile(source: KernelSource) -> str:
    try:
        with sentinels():
            kernel = triton_compat.recompile(*source.compiled_from)
    except Exception as error:  # Triton's own compile errors name the kernel's line
        raise TraceFailedError(f"{source.name}: its markers could not be compiled as PTX sentinels "
                               f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
                               "it ran untraced", "rewrite_failed") from None
    if kernel.name != source.name or not has_sentinels(kernel.asm["ptx"]):
        raise TraceFailedError(f"{source.name}: compiled again with its markers, it left no sentinels; it ran "
                               "untraced", "rewrite_failed")
    # The copy runs with the kernel's own launch: it must ask for the very same block.
    built = triton_compat.metadata_dict(kernel.metadata)
    differ = [key for key in LAUNCH_KEYS if built.get(key) != source.metadata.get(key)]
    if differ:
        raise TraceFailedError(f"{source.name}: compiled again with its markers, it needs another "
                               f"{', '.join(differ)} than the kernel launched; it ran untraced", "rewrite_failed")
    return kernel.asm["ptx"]
