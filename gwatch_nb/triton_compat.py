"""Every use of Triton's internals, in one place.

gwatch-nb reaches past Triton's public API at eight points. Each is here, with the
Triton versions it is known to work on: 3.6.0 runs on the H200 (tests/gpu_checks.sh),
3.9.0 runs the CPU test suite, and 3.4.0, 3.5.0 and 3.6.0 were read in their released
wheels (what each lacks is said below and handled here):

- **Builtin call forms** (``builtin``, ``compile_context``, ``inline_asm``,
  ``constexpr_value``): a function carrying ``core.TRITON_BUILTIN`` is called by the
  code generator with its compiler context as ``_semantic`` (3.4–3.9; older Triton
  passed ``_builder``, still accepted) and by the interpreter with neither.
- **Load hooks** (``add_load_hook``, ``remove_load_hook``):
  ``knobs.runtime.kernel_load_end_hook`` is a ``HookChain`` with ``add``/``remove``,
  called as ``(module, function, name, metadata_group, hash)`` (3.5–3.9). 3.4 has no
  load hook: kernels loaded during a trace are found by the compiled-kernel scan.
- **CompiledKernel scans** (``compiled_kernels``, ``loaded_handle``):
  ``triton.compiler.compiler.CompiledKernel`` objects hold ``function`` (the CUfunction
  handle once loaded, else None), ``name``, ``asm["ptx"]``, ``asm["cubin"]``, ``src.fn``
  (the JITFunction, ``compiled_cubin``, ``jit_function``) and ``metadata`` (a namedtuple
  whose ``target`` is a ``GPUTarget``) (3.4–3.9).
- **Interpreter hooks** (``interpreted_kernels``, ``add_pre_run_hook``,
  ``remove_pre_run_hook``, ``program_position``): ``InterpretedFunction.add_pre_run_hook``
  and its ``pre_run_hooks`` list (3.6–3.9; 3.4 and 3.5 have none, and the interpreter
  tier says it needs 3.6); ``interpreter_builder.grid_dim`` / ``grid_idx`` while a
  program instance runs (3.4–3.9).
- **Backend and ptxas** (``assemble_like_triton``, ``ptxas``, ``ptxas_identity``):
  ``make_backend(GPUTarget)``, ``backend.parse_options``,
  ``backend.make_cubin(src, metadata, options, capability)`` (3.4–3.9) and
  ``triton.backends.nvidia.compiler.get_ptxas`` returning a tool with ``path`` and
  ``version`` (3.4–3.9; it takes the capability from 3.6 on, nothing before).
- **Launch configurations** (``compiled_config``, ``compiled_configs``, ``interpreted_constexprs``):
  ``CompiledKernel.src`` is the ``ASTSource`` it was compiled from, whose ``constants``
  map ``(argument index,)`` to a value and whose ``fn.params[i].is_constexpr`` says which
  are ``tl.constexpr`` arguments; ``metadata`` holds ``num_warps``, ``num_stages``,
  ``num_ctas``, ``maxnreg`` (3.6–3.9). An interpreted kernel's constexprs are the
  arguments annotated ``tl.constexpr`` (``jit._normalize_ty`` gives "constexpr") (3.6–3.9).
- **Autotuner** (``autotuners``, ``watch_autotuner``, ``retune``, ``autotune_config``,
  ``best_config``): ``triton.runtime.autotuner.Autotuner`` is launched through its
  ``run(*args, **kwargs)``; when its ``cache`` (a dict: tuning key -> Config) lacks the
  call's key it calls ``_bench(*args, config=Config, **meta)`` once per pruned config,
  each timing many launches of that config (its ``do_bench``), then sets ``best_config``
  and launches the chosen one; ``cache_results`` sends it to a disk cache first; a
  ``Config`` has ``kwargs``, ``num_warps``, ``num_stages``, ``num_ctas``, ``maxnreg``;
  ``base_fn`` is the kernel's Python function (3.6 and 3.9 read: the same).
- **Driver choice** (``is_missing_gpu_driver``): a kernel compiled for a GPU, launched
  where Triton finds no GPU driver, raises ``RuntimeError("0 active drivers (...)")``
  (3.4–3.9).
"""
from __future__ import annotations

import base64
import contextlib
import gc
import io
import inspect
import os
import re
from typing import Callable

from triton.language import core

from .errors import UnsupportedTritonError


def version() -> str:
    import triton
    return triton.__version__


# ------------------------------------------------------------ builtin call forms

def builtin(fn: Callable) -> Callable:
    """Mark ``fn`` a Triton builtin: the code generator then calls it with its compiler
    context (see ``compile_context``)."""
    setattr(fn, core.TRITON_BUILTIN, True)
    fn.signature = inspect.signature(fn)
    return fn


def compile_context(_semantic, _builder) -> dict | None:
    """The keyword a builtin passes on to Triton's own builtins, or None when the
    interpreter called it (it passes no compiler context)."""
    if _semantic is not None:
        return {"_semantic": _semantic}
    if _builder is not None:
        return {"_builder": _builder}
    return None


def constexpr_value(value):
    """A ``tl.constexpr`` argument's Python value (anything else as it is)."""
    return core._unwrap_if_constexpr(value)


def inline_asm(asm: str, context: dict):
    """Side-effecting inline asm yielding one unused i32 (Triton requires a result);
    ``is_pure=False`` keeps it where it was written in program order."""
    return core.inline_asm_elementwise(asm, "=r", [], dtype=core.int32, is_pure=False, pack=1, **context)


# ------------------------------------------------------------ load hooks

def _load_end_hooks():
    from triton import knobs
    hooks = getattr(knobs.runtime, "kernel_load_end_hook", None)
    return hooks if hasattr(hooks, "add") and hasattr(hooks, "remove") else None


def add_load_hook(callback: Callable) -> bool:
    """Call ``callback(module, function, name, metadata_group, hash)`` after Triton loads a
    kernel; False where this Triton has no hook chain to join."""
    hooks = _load_end_hooks()
    if hooks is None:
        return False
    hooks.add(callback)
    return True


def remove_load_hook(callback: Callable) -> None:
    _load_end_hooks().remove(callback)


# ------------------------------------------------------------ CompiledKernel scans

def metadata_dict(metadata) -> dict:
    """Triton's compile metadata (a namedtuple in memory, a dict in the cache's JSON) as a
    plain dict whose ``target`` is a dict too."""
    if hasattr(metadata, "_asdict"):
        metadata = metadata._asdict()
    out = dict(metadata)
    target = out.get("target")
    if target is not None and not isinstance(target, dict):
        out["target"] = {"backend": target.backend, "arch": target.arch, "warp_size": target.warp_size}
    return out


def loaded_kernels() -> tuple[list[tuple[object, int, str, str, dict]], list[tuple[object, int, str, str]]]:
    """Every kernel of the process a launch can name, in one pass over the heap: each loaded
    CompiledKernel that kept its PTX, as (object, CUfunction handle, name, PTX, metadata), and
    each kernel torch.compile launches itself, as (object, handle, name, Triton's hash)
    (Inductor's StaticallyLaunchedCudaKernel: it loads the cubin Triton built through its own
    launcher, so Triton neither hooks the load nor keeps a CompiledKernel)."""
    from triton.compiler.compiler import CompiledKernel
    compiled, launched_by_torch = [], []
    for obj in gc.get_objects():
        kind = type(obj)  # type() rather than isinstance(): some heap objects warn when __class__ is read
        if issubclass(kind, CompiledKernel):
            handle = obj.function
            ptx = obj.asm.get("ptx") if hasattr(obj.asm, "get") else None
            if handle and ptx is not None:
                compiled.append((obj, int(handle), obj.name, ptx, metadata_dict(obj.metadata)))
        elif kind.__name__ == "StaticallyLaunchedCudaKernel":
            handle, name, digest = getattr(obj, "function", None), getattr(obj, "name", None), getattr(obj, "hash", None)
            if handle and isinstance(name, str) and isinstance(digest, str):
                launched_by_torch.append((obj, int(handle), name, digest))
    return compiled, launched_by_torch


def compiled_kernels() -> list[tuple[object, int, str, str, dict]]:
    """The loaded CompiledKernels of the process (loaded_kernels' first list)."""
    return loaded_kernels()[0]


def triton_cache_dirs() -> list[str]:
    """Where Triton may have kept a kernel's files: its cache directory, and Inductor's for each
    device (torch.compile's compile workers build into it)."""
    from triton import knobs
    dirs = [os.environ.get("TRITON_CACHE_DIR"), knobs.cache.dir]
    try:
        from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
        dirs += [triton_cache_dir(device) for device in range(8)]
    except Exception:  # no torch, or another Inductor: Triton's own directory is all there is
        pass
    return list(dict.fromkeys(d for d in dirs if d and os.path.isdir(d)))


def cache_folder(digest: str) -> str:
    """The name of the folder Triton's file cache keeps a compiled kernel's files in (its
    hash in base 32, 3.4-3.9)."""
    return base64.b32encode(bytes.fromhex(digest)).decode().rstrip("=")


def compiled_cubin(obj) -> bytes | None:
    """The cubin a CompiledKernel loaded (``asm["cubin"]``, 3.4-3.9)."""
    cubin = obj.asm.get("cubin") if hasattr(obj.asm, "get") else None
    return bytes(cubin) if cubin is not None else None


def jit_function(obj):
    """The @triton.jit function a CompiledKernel was compiled from (``src.fn``), or None."""
    return getattr(getattr(obj, "src", None), "fn", None)


def compile_source(obj) -> tuple | None:
    """(the ASTSource, the options) a CompiledKernel was compiled from (``src``, 3.4-3.9), or
    None. The options are its metadata's, but for ``num_warps``: a warp-specialized kernel's
    metadata counts every partition's warps, its TTGIR (``ttg.num-warps``) those asked for."""
    src = getattr(obj, "src", None)
    if getattr(src, "fn", None) is None:
        return None
    options = metadata_dict(obj.metadata)
    asked = re.search(r'"ttg\.num-warps"\s*=\s*(\d+)', obj.asm.get("ttgir", "") if hasattr(obj.asm, "get") else "")
    if asked:
        options["num_warps"] = int(asked.group(1))
    return src, options


def recompile(src, options: dict):
    """The CompiledKernel Triton makes of ``src`` with ``options`` (a metadata_dict, as
    compile_source gives them)."""
    import triton
    from triton.backends.compiler import GPUTarget

    def frozen(value):  # the options are hashed: lists (as JSON gives them) become tuples
        return tuple(frozen(v) for v in value) if isinstance(value, (list, tuple)) else value
    return triton.compile(src, target=GPUTarget(**options["target"]),
                          options={k: frozen(v) for k, v in options.items() if k != "target"})


def loaded_handle(obj) -> int | None:
    """The CUfunction handle a CompiledKernel holds now (None once unloaded)."""
    return None if obj is None else obj.function


# ------------------------------------------------------------ interpreter hooks

def interpreted_kernels() -> list:
    """Every Triton kernel object of this process that runs on the interpreter."""
    from triton.runtime.interpreter import InterpretedFunction
    return [obj for obj in gc.get_objects() if issubclass(type(obj), InterpretedFunction)]


def add_pre_run_hook(kernel, hook: Callable) -> None:
    """Call ``hook(*args, **kwargs)`` before each launch of an interpreted kernel."""
    if not hasattr(kernel, "add_pre_run_hook"):
        raise UnsupportedTritonError(f"the interpreter tier needs Triton 3.6 or later (launch hooks of "
                                     f"interpreted kernels); this is Triton {version()}")
    kernel.add_pre_run_hook(hook)


def remove_pre_run_hook(kernel, hook: Callable) -> None:
    if hook in kernel.pre_run_hooks:
        kernel.pre_run_hooks.remove(hook)


def program_position() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, program id) of the program instance the interpreter is running."""
    from triton.runtime.interpreter import interpreter_builder
    return tuple(interpreter_builder.grid_dim), tuple(interpreter_builder.grid_idx)


# ------------------------------------------------------------ backend and ptxas

def _target_and_options(metadata: dict) -> tuple:
    """The target and the options Triton's ptxas step reads, from a kernel's metadata."""
    from triton.backends.compiler import GPUTarget
    target = metadata.get("target") or {}
    capability = int(target.get("arch", 90))
    gpu_target = GPUTarget(target.get("backend", "cuda"), capability, int(target.get("warp_size", 32)))
    # Only what Triton's ptxas step reads (.maxnreg and the like travel inside the PTX).
    wanted = ("enable_fp_fusion", "ptx_options", "instrumentation_mode")
    return gpu_target, capability, {k: metadata[k] for k in wanted if metadata.get(k) is not None}


def assemble_like_triton(ptx: str, metadata: dict) -> bytes:
    """Assemble with the ptxas and flags Triton used for the kernel ``metadata`` describes."""
    from triton.compiler import make_backend
    target, capability, options = _target_and_options(metadata)
    backend = make_backend(target)
    parsed = backend.parse_options(dict(options))
    # Triton prints a long reproducer on failure; the error message carries ptxas's own words.
    with contextlib.redirect_stdout(io.StringIO()):
        return backend.make_cubin(ptx, {}, parsed, capability)


def ptxas(capability: int):
    """Triton's ptxas for this compute capability (``.path``, ``.version``)."""
    from triton.backends.nvidia.compiler import get_ptxas
    # 3.4 and 3.5 have one ptxas for every capability; from 3.6 on, one per capability.
    return get_ptxas(capability) if inspect.signature(get_ptxas).parameters else get_ptxas()


def ptxas_identity(metadata: dict) -> str:
    """What decides the cubin besides the PTX: the ptxas and the options it is given."""
    _, capability, options = _target_and_options(metadata)
    tool = ptxas(capability)
    return f"{tool.path}|{tool.version}|{sorted(options.items())}"


# ------------------------------------------------------------ launch configurations

def compiled_config(obj) -> dict:
    """The configuration (``launch_config``) a CompiledKernel was compiled for."""
    from . import launch_config
    metadata = metadata_dict(obj.metadata)
    src = getattr(obj, "src", None)
    fn = getattr(src, "fn", None)
    if fn is None or not hasattr(src, "constants"):  # not compiled from a Python kernel: unknown
        return launch_config.make(None, {k: metadata[k] for k in launch_config.OPTIONS if k in metadata})
    constexprs = {fn.arg_names[path[0]]: value for path, value in sorted(src.constants.items())
                  if len(path) == 1 and fn.params[path[0]].is_constexpr}
    return launch_config.make(constexprs, {k: metadata[k] for k in launch_config.OPTIONS if k in metadata})


def compiled_configs(handles) -> dict[int, dict]:
    """The configuration (``launch_config``) of each loaded CompiledKernel whose CUfunction
    handle is among ``handles`` (one pass over the heap)."""
    from triton.compiler.compiler import CompiledKernel
    wanted, found = set(handles), {}
    for obj in gc.get_objects():
        if issubclass(type(obj), CompiledKernel) and obj.function and int(obj.function) in wanted:
            found[int(obj.function)] = compiled_config(obj)
    return found


def interpreted_constexprs(kernel, args: tuple, kwargs: dict) -> dict:
    """The ``tl.constexpr`` arguments of one launch of an interpreted kernel, by name, from
    the arguments its pre-run hook receives."""
    from triton.runtime.jit import _normalize_ty
    annotations = inspect.get_annotations(kernel.fn)
    given = {**dict(zip(kernel.arg_names, args)), **kwargs}
    return {name: given[name] for name in kernel.arg_names
            if name in given and _normalize_ty(annotations.get(name)) == "constexpr"}


# ------------------------------------------------------------ autotuner

def autotuners() -> list:
    """Every ``triton.autotune`` kernel object of this process."""
    from triton.runtime.autotuner import Autotuner
    return [obj for obj in gc.get_objects() if issubclass(type(obj), Autotuner)]


def autotuner_name(tuner) -> str:
    """The kernel's name, as its launches carry it."""
    return tuner.base_fn.__name__


def autotune_config(config) -> dict:
    """A ``triton.Config`` as a configuration (``launch_config``)."""
    from . import launch_config
    return launch_config.make(config.kwargs, {k: getattr(config, k) for k in launch_config.OPTIONS})


def best_config(tuner):
    """The Config the autotuner chose at its latest call (None before any)."""
    return getattr(tuner, "best_config", None)


def watch_autotuner(tuner, benchmarking: Callable, running: Callable) -> None:
    """Run every benchmark of a config inside the context ``benchmarking(tuner, config)``
    and every call of the autotuned kernel inside ``running(tuner)`` (until
    ``unwatch_autotuner``)."""
    bench, run = tuner._bench, tuner.run

    def watched_bench(*args, config, **meta):
        with benchmarking(tuner, config):
            return bench(*args, config=config, **meta)

    def watched_run(*args, **kwargs):
        with running(tuner):
            return run(*args, **kwargs)

    tuner._bench, tuner.run = watched_bench, watched_run


def unwatch_autotuner(tuner) -> None:
    for name in ("_bench", "run"):
        tuner.__dict__.pop(name, None)


def retune(tuner) -> Callable[[], None]:
    """Make the autotuner benchmark every config again at its next call (its choices
    forgotten, its disk cache skipped); returns what turns the disk cache back on."""
    tuner.cache.clear()
    cache_results = tuner.cache_results
    tuner.cache_results = False

    def restore() -> None:
        tuner.cache_results = cache_results

    return restore


# ------------------------------------------------------------ driver choice

def is_missing_gpu_driver(error: BaseException | None) -> bool:
    """Triton's error for a kernel compiled for a GPU, launched where there is none."""
    return isinstance(error, RuntimeError) and str(error).startswith("0 active drivers")
