"""Instrumented copies of kernels: rewrite the PTX, assemble it as Triton would, load it.

The cubin is built with Triton's own backend (same ptxas, same flags), so the only
difference from the original binary is the instrumentation. Cubins are cached on disk
and loaded modules in the process, so tracing a kernel again is fast."""
from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass

from .. import ptx as ptx_rewrite
from .. import triton_compat
from ..cache import cache_dir, kept
from ..records import SiteTable
from ..errors import TraceFailedError
from ..sources import KernelSource
from . import driver


@dataclass
class InstrumentedKernel:
    name: str
    function: object         # CUfunction of the instrumented copy
    handle: int
    num_params: int          # the original's; the tier's trace parameters follow
    sites: tuple
    table: SiteTable         # what the host needs to decode its records
    resources: dict          # its registers, local and shared memory (``resources``)
    build_seconds: float     # rewrite + assemble + load, the first time
    buffer: object = None    # how its buffers are laid out and filled: layout.PTX_BUFFERS or layout.SASS_BUFFERS
    extra: dict = None       # what the tier learnt building it (the sass tier: sites, costs)
    most_events: int | None = None  # the most events one warp can take, where the tier can bound it

    def __post_init__(self):
        from .. import layout
        self.buffer = self.buffer or layout.PTX_BUFFERS
        self.extra = self.extra or {}


def _cached_cubin(text: str, metadata: dict) -> bytes:
    key = hashlib.sha256((text + triton_compat.ptxas_identity(metadata)).encode()).hexdigest()
    return kept("cubin", key + ".cubin", lambda: triton_compat.assemble_like_triton(text, metadata))


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
        raise TraceFailedError(f"{source.name}: cannot instrument its PTX ({error})", "rewrite_failed") from None
    if not rewritten.changed:
        return None
    entry = next((e for e in rewritten.entries if e.name == source.name), None)
    if entry is None:
        raise TraceFailedError(f"{source.name}: its PTX has no entry of that name", "rewrite_failed")
    try:
        cubin = _cached_cubin(rewritten.ptx, source.metadata)
    except Exception as error:
        kept = _keep_for_report(source, rewritten.ptx)
        raise TraceFailedError(f"{source.name}: ptxas rejected the instrumented PTX ({_ptxas_complaint(error)}); "
                               f"it ran untraced; PTX kept at {kept}", "ptxas_failed") from None
    try:
        module = driver.load_cubin(cubin)
        function = driver.get_function(module, source.name)
    except driver.CudaError as error:
        kept = _keep_for_report(source, rewritten.ptx)
        raise TraceFailedError(f"{source.name}: the driver could not load the instrumented kernel ({error}); "
                               f"it ran untraced; PTX kept at {kept}", "load_failed") from None
    return InstrumentedKernel(
        name=source.name, function=function, handle=int(function), num_params=entry.num_params,
        sites=tuple(s for s in rewritten.sites if s.entry == source.name),
        table=SiteTable.of_entry(rewritten.sites, source.name),
        resources=resources(function),
        build_seconds=time.perf_counter() - began,
    )


#: What a kernel's binary needs per thread and per block, as the driver reports it.
_RESOURCES = {"registers": "CU_FUNC_ATTRIBUTE_NUM_REGS",
              "local_bytes": "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",  # per thread: register spills and stack
              "shared_bytes": "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"}  # static, per block


def resources(function) -> dict:
    return {key: driver.function_attribute(function, name) for key, name in _RESOURCES.items()}


def cost(original_handle: int, kernel: InstrumentedKernel, block_threads: int, dynamic_shared_bytes: int) -> dict:
    """What instrumenting changed, as {resource: [original, instrumented]}
    (instrumentation_cost.RESOURCES: registers, local memory, static shared memory, and
    the blocks an SM holds at this launch's block size and dynamic shared memory)."""
    original = driver.function_of(original_handle)
    before = resources(original)
    change = {key: [before[key], kernel.resources[key]] for key in _RESOURCES}
    change["blocks_per_sm"] = [driver.max_active_blocks(f, block_threads, dynamic_shared_bytes)
                               for f in (original, kernel.function)]
    return change

