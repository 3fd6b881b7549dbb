"""Where a launched kernel's PTX (and cubin) comes from.

A launch names only its CUfunction handle. For a Triton kernel the PTX and compile
options live either in the files Triton's load hook names (kernels loaded while a trace
is active) or on Triton's in-process CompiledKernel objects (kernels loaded before)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import weakref
from dataclasses import dataclass, field

from . import triton_compat


@dataclass(frozen=True)
class KernelSource:
    name: str
    ptx: str
    metadata: dict  # Triton's compile metadata (target, num_warps, enable_fp_fusion, ...)
    origin: str     # "load-hook", "compiled-kernel" or "triton-cache" (a kernel torch.compile launches itself)
    cubin: bytes | None = field(default=None, repr=False)  # the cubin Triton loaded (the sass tier's input)
    function: object = field(default=None, repr=False, compare=False)  # the @triton.jit function, where known
    # (Triton's ASTSource, the options) it was compiled from, where known (triton_compat.compile_source)
    compiled_from: tuple | None = field(default=None, repr=False, compare=False)
    # the PTX Triton loaded, where `ptx` is the copy with sentinels (sentinels.ensure)
    loaded_ptx: str | None = field(default=None, repr=False, compare=False)
    digest: str = field(init=False)  # sha256 of the PTX, computed once

    def __post_init__(self):
        object.__setattr__(self, "digest", hashlib.sha256(self.ptx.encode()).hexdigest())


#: CompiledKernels seen by a scan of the heap: handle -> (weak reference, source). An
#: entry is trusted only while that very object is alive and still has that handle, so a
#: handle the driver reuses after Triton unloads a module is never confused for the old one.
_scanned: dict[int, tuple[weakref.ref, KernelSource]] = {}


class TritonSources:
    """Finds Triton kernels' PTX by CUfunction handle, for one trace session."""

    def __init__(self):
        self._loaded: dict[int, KernelSource | None] = {}  # kernels loaded during the session
        self._not_triton: set[int] = set()
        self._hook_installed = False

    def install(self) -> None:
        """Start noting kernels Triton loads (where its load hook exists; the scan of
        compiled kernels finds the others)."""
        self._hook_installed = triton_compat.add_load_hook(self._on_load)

    def uninstall(self) -> None:
        if self._hook_installed:
            triton_compat.remove_load_hook(self._on_load)
            self._hook_installed = False

    def _on_load(self, module, function, name, metadata_group, hash) -> None:
        if function is not None:
            self._loaded[int(function)] = self._from_files(name, dict(metadata_group))
            self._not_triton.discard(int(function))

    def find(self, handle: int) -> KernelSource | None:
        """The kernel's source, or None when no Triton kernel has this handle."""
        if self._loaded.get(handle) is not None:
            return self._loaded[handle]
        if handle in self._not_triton:
            return None
        source = self._from_compiled_kernels(handle)
        if source is None:
            self._not_triton.add(handle)
        return source

    def with_function(self, source: KernelSource, handle: int) -> KernelSource:
        """`source` with its @triton.jit function, which a kernel found through the load hook
        lacks: its CompiledKernel, loaded by now, has it."""
        if source.function is not None:
            return source
        compiled = self._from_compiled_kernels(handle)
        if compiled is None or compiled.function is None:
            return source
        source = dataclasses.replace(source, function=compiled.function, compiled_from=compiled.compiled_from)
        if self._loaded.get(handle) is not None:
            self._loaded[handle] = source
        return source

    @staticmethod
    def _from_files(name: str, group: dict) -> KernelSource | None:
        ptx_path = next((p for f, p in group.items() if f.endswith(".ptx")), None)
        cubin_path = next((p for f, p in group.items() if f.endswith(".cubin")), None)
        json_path = next((p for f, p in group.items() if f.endswith(".json") and not f.startswith("__grp__")),
                         None)
        if ptx_path is None or not os.path.exists(ptx_path):
            return None
        with open(ptx_path) as f:
            ptx = f.read()
        metadata = {}
        if json_path and os.path.exists(json_path):
            with open(json_path) as f:
                metadata = json.load(f)
        cubin = None
        if cubin_path and os.path.exists(cubin_path):
            with open(cubin_path, "rb") as f:
                cubin = f.read()
        return KernelSource(name, ptx, triton_compat.metadata_dict(metadata), "load-hook", cubin)

    @staticmethod
    def _from_compiled_kernels(handle: int) -> KernelSource | None:
        known = _scanned.get(handle)
        if known is None or triton_compat.loaded_handle(known[0]()) != handle:
            _scan_compiled_kernels()
            known = _scanned.get(handle)
        return known[1] if known else None


def from_compiled_kernel(obj) -> KernelSource:
    """The source of a CompiledKernel that kept its PTX (loaded or not)."""
    return KernelSource(obj.name, obj.asm["ptx"], triton_compat.metadata_dict(obj.metadata), "compiled-kernel",
                        triton_compat.compiled_cubin(obj), triton_compat.jit_function(obj),
                        triton_compat.compile_source(obj))


def _scan_compiled_kernels() -> None:
    """Index every loaded CompiledKernel of the process, and every kernel torch.compile
    launches itself (one pass over the heap)."""
    for handle in [h for h, (ref, _) in _scanned.items() if triton_compat.loaded_handle(ref()) != h]:
        del _scanned[handle]
    compiled, launched_by_torch = triton_compat.loaded_kernels()
    for obj, handle, name, ptx, metadata in compiled:
        if handle not in _scanned:
            _scanned[handle] = (weakref.ref(obj), from_compiled_kernel(obj))
    for obj, handle, name, digest in launched_by_torch:
        if handle not in _scanned:
            source = _from_cache(name, digest)
            if source is not None:
                _scanned[handle] = (weakref.ref(obj), source)


def _from_cache(name: str, digest: str) -> KernelSource | None:
    """A kernel's source from the files Triton cached for it (its folder is named by its hash)."""
    for directory in triton_compat.triton_cache_dirs():
        folder = os.path.join(directory, triton_compat.cache_folder(digest))
        if os.path.isdir(folder):
            source = TritonSources._from_files(name, {f: os.path.join(folder, f) for f in os.listdir(folder)})
            if source is not None:
                return dataclasses.replace(source, origin="triton-cache")
    return None
