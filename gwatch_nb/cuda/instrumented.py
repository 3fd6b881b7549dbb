"""Instrumented copies of kernels: rewrite the PTX, assemble it as Triton would, load it.

The cubin is built with Triton's own backend (same ptxas, same flags), so the only
difference from the original binary is the instrumentation. Cubins are cached on disk
and loaded modules in the process, so tracing a kernel again is fast."""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import threading
import time
from dataclasses import dataclass

from .. import ptx as ptx_rewrite
from ..records import SiteTable
from ..errors import TraceFailedError
from ..sources import KernelSource
from . import driver


@dataclass
class InstrumentedKernel:
    name: str
    function: object         # CUfunction of the instrumented copy
    handle: int
    num_params: int          # the original's; the trace buffer, capacity and slot size follow
    sites: tuple
    table: SiteTable         # what the host needs to decode its records
    registers: int
    build_seconds: float     # rewrite + assemble + load, the first time


def cache_dir() -> str:
    root = os.environ.get("GWATCH_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gwatch_nb")
    return root


def _compile_options(metadata: dict) -> tuple:
    """The target and the options Triton's ptxas step reads, from the kernel's metadata."""
    from triton.backends.compiler import GPUTarget
    target = metadata.get("target") or {}
    capability = int(target.get("arch", 90))
    gpu_target = GPUTarget(target.get("backend", "cuda"), capability, int(target.get("warp_size", 32)))
    # Only what Triton's ptxas step reads (.maxnreg and the like travel inside the PTX).
    wanted = ("enable_fp_fusion", "ptx_options", "instrumentation_mode")
    return gpu_target, capability, {k: metadata[k] for k in wanted if metadata.get(k) is not None}


def assemble_like_triton(ptx: str, metadata: dict) -> bytes:
    """Assemble with the ptxas and flags Triton used for the original kernel."""
    from triton.compiler import make_backend
    target, capability, options = _compile_options(metadata)
    backend = make_backend(target)
    parsed = backend.parse_options(dict(options))
    # Triton prints a long reproducer on failure; the error message carries ptxas's own words.
    with contextlib.redirect_stdout(io.StringIO()):
        return backend.make_cubin(ptx, {}, parsed, capability)


def _ptxas_identity(metadata: dict) -> str:
    from triton.backends.nvidia.compiler import get_ptxas
    _, capability, options = _compile_options(metadata)
    tool = get_ptxas(capability)
    return f"{tool.path}|{tool.version}|{sorted(options.items())}"


def _cached_cubin(text: str, metadata: dict) -> bytes:
    key = hashlib.sha256((text + _ptxas_identity(metadata)).encode()).hexdigest()
    path = os.path.join(cache_dir(), "cubin", key + ".cubin")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    cubin = assemble_like_triton(text, metadata)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "wb") as f:
        f.write(cubin)
    os.replace(partial, path)
    return cubin


def _ptxas_complaint(error: Exception) -> str:
    """The line of a ptxas failure that says what is wrong."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if re.search(r"\b(error|fatal)\s+:", line):  # ptxas's own diagnostic, e.g. "line 9; error   : ..."
            return line
    return lines[0] if lines else type(error).__name__


def _keep_for_report(source: KernelSource, text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    folder = os.path.join(cache_dir(), "failed")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{source.name}-{digest}.ptx")
    with open(path, "w") as f:
        f.write(text)
    return path


_lock = threading.Lock()
# (context, sha of original PTX, scope ids traced or None for all) -> the loaded copy
_by_ptx: dict[tuple[int, str, frozenset | None], InstrumentedKernel | None] = {}


def instrument_kernel(context: int, original_handle: int, source: KernelSource,
                      scopes: frozenset | None = None) -> InstrumentedKernel | None:
    """The instrumented copy of a kernel in this context, its markers of ``scopes`` (all
    when None) traced; None when its PTX has no such markers.

    Raises TraceFailedError (with the kept PTX's path) when the rewrite, ptxas or the
    module load fails."""
    key = (context, source.digest, scopes)
    with _lock:
        if key not in _by_ptx:
            _by_ptx[key] = _build(source, scopes)
        kernel = _by_ptx[key]
    if kernel is not None:
        driver.copy_attributes(original_handle, kernel.function)
    return kernel


def _build(source: KernelSource, scopes: frozenset | None) -> InstrumentedKernel | None:
    began = time.perf_counter()
    try:
        rewritten = ptx_rewrite.instrument(source.ptx, scopes)
    except ptx_rewrite.PTXRewriteError as error:
        raise TraceFailedError(f"{source.name}: cannot instrument its PTX ({error})") from None
    if not rewritten.changed:
        return None
    entry = next((e for e in rewritten.entries if e.name == source.name), None)
    if entry is None:
        raise TraceFailedError(f"{source.name}: its PTX has no entry of that name")
    try:
        cubin = _cached_cubin(rewritten.ptx, source.metadata)
    except Exception as error:
        kept = _keep_for_report(source, rewritten.ptx)
        raise TraceFailedError(f"{source.name}: ptxas rejected the instrumented PTX ({_ptxas_complaint(error)}); "
                               f"it ran untraced; PTX kept at {kept}") from None
    try:
        module = driver.load_cubin(cubin)
        function = driver.get_function(module, source.name)
    except driver.CudaError as error:
        kept = _keep_for_report(source, rewritten.ptx)
        raise TraceFailedError(f"{source.name}: the driver could not load the instrumented kernel ({error}); "
                               f"it ran untraced; PTX kept at {kept}") from None
    return InstrumentedKernel(
        name=source.name, function=function, handle=int(function), num_params=entry.num_params,
        sites=tuple(s for s in rewritten.sites if s.entry == source.name),
        table=SiteTable.of_entry(rewritten.sites, source.name),
        registers=driver.function_attribute(function, "CU_FUNC_ATTRIBUTE_NUM_REGS"),
        build_seconds=time.perf_counter() - began,
    )
