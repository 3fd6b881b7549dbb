"""The CUDA driver calls tracing makes, through cuda-python, with errors turned into exceptions."""
from __future__ import annotations

import functools

import numpy as np

from ..errors import GwatchError, NoGPUError


class CudaError(GwatchError):
    """A CUDA driver call failed."""


def _driver():
    from cuda.bindings import driver
    return driver


def check(result, what: str):
    """Unpack a cuda-python (error, *values) tuple, raising CudaError on failure."""
    cu = _driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise CudaError(f"{what} failed: {name.decode() if isinstance(name, bytes) else err}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def init() -> int:
    """Initialise the driver; the number of devices. NoGPUError when there is no GPU."""
    try:
        cu = _driver()
        err, = cu.cuInit(0)
        if err == cu.CUresult.CUDA_SUCCESS:
            err, count = cu.cuDeviceGetCount()
            if err == cu.CUresult.CUDA_SUCCESS and count > 0:
                return count
    except Exception as error:  # no driver library at all (DynamicLibNotFoundError and kin)
        raise NoGPUError(f"no CUDA driver on this machine ({type(error).__name__}); use "
                         "instrumentation_tier='interpreter' with TRITON_INTERPRET=1 set before triton is imported") \
            from None
    raise NoGPUError("no CUDA device found; use instrumentation_tier='interpreter' with TRITON_INTERPRET=1 set "
                     "before triton is imported")


def current_device() -> int:
    """The device of the calling thread's current context; before the process's first CUDA
    work there is none, and that work will run on device 0 unless it picks another."""
    cu = _driver()
    result = cu.cuCtxGetDevice()
    if result[0] == cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:
        return 0
    return int(check(result, "cuCtxGetDevice"))


def device_info(device: int) -> dict:
    """Name, SM count and nominal SM clock of a device (for the trace's metadata)."""
    cu = _driver()
    handle = cu.CUdevice(device)
    name = check(cu.cuDeviceGetName(256, handle), "cuDeviceGetName")
    attr = cu.CUdevice_attribute
    info = {"device": name.split(b"\0")[0].decode(errors="replace"), "device_index": device}
    for key, attribute in (("sm_count", "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
                           ("sm_clock_khz", "CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),
                           ("compute_capability_major", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
                           ("compute_capability_minor", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")):
        if hasattr(attr, attribute):
            err, value = cu.cuDeviceGetAttribute(getattr(attr, attribute), handle)
            if err == cu.CUresult.CUDA_SUCCESS:
                info[key] = int(value)
    if info.get("sm_clock_khz"):
        info["sm_clock_hz"] = info.pop("sm_clock_khz") * 1000
    return info


def free_memory() -> tuple[int, int]:
    """(free, total) bytes of the current context's device."""
    return check(_driver().cuMemGetInfo(), "cuMemGetInfo")


def load_cubin(cubin: bytes):
    return check(_driver().cuModuleLoadData(cubin), "cuModuleLoadData")


def unload(module) -> None:
    check(_driver().cuModuleUnload(module), "cuModuleUnload")


def get_function(module, name: str):
    return check(_driver().cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")


#: Attributes a launch may depend on that are set on the function, not baked into the binary.
_SETTABLE_ATTRIBUTES = (
    "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
    "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT",
    "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
    "CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE",
)


def copy_attributes(source_handle: int, target) -> None:
    """Give the instrumented function the original's settable attributes (e.g. the
    dynamic shared memory Triton raised above 48 KiB)."""
    cu = _driver()
    source = cu.CUfunction(source_handle)
    for name in _SETTABLE_ATTRIBUTES:
        attribute = getattr(cu.CUfunction_attribute, name, None)
        if attribute is None:
            continue
        err, value = cu.cuFuncGetAttribute(attribute, source)
        if err == cu.CUresult.CUDA_SUCCESS:
            check(cu.cuFuncSetAttribute(target, attribute, value), f"cuFuncSetAttribute({name})")


def function_attribute(function, name: str) -> int:
    cu = _driver()
    return int(check(cu.cuFuncGetAttribute(getattr(cu.CUfunction_attribute, name), function),
                     f"cuFuncGetAttribute({name})"))


def function_of(handle: int):
    """The CUfunction a launch names by its handle."""
    return _driver().CUfunction(handle)


def max_active_blocks(function, block_threads: int, dynamic_shared_bytes: int) -> int:
    """Blocks of this size one SM can hold at once (the occupancy calculator's answer)."""
    return int(check(_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(function, block_threads,
                                                                           dynamic_shared_bytes),
                     "cuOccupancyMaxActiveBlocksPerMultiprocessor"))


def is_capturing(stream_handle: int) -> bool:
    cu = _driver()
    status = check(cu.cuStreamIsCapturing(cu.CUstream(stream_handle)), "cuStreamIsCapturing")
    return status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def alloc(nbytes: int) -> int:
    return int(check(_driver().cuMemAlloc(nbytes), "cuMemAlloc"))


def free(pointer: int) -> None:
    check(_driver().cuMemFree(pointer), "cuMemFree")


def copy_to_device_async(pointer: int, data: np.ndarray, stream_handle: int) -> None:
    """Stream-ordered copy from pageable host memory (staged before the call returns)."""
    cu = _driver()
    check(cu.cuMemcpyHtoDAsync(pointer, data.ctypes.data, data.nbytes, cu.CUstream(stream_handle)),
          "cuMemcpyHtoDAsync")


def fill32_2d_async(pointer: int, pitch: int, value: int, width_words: int, rows: int, stream_handle: int) -> None:
    """Set `width_words` 32-bit words in each of `rows` rows, `pitch` bytes apart."""
    cu = _driver()
    check(cu.cuMemsetD2D32Async(pointer, pitch, value, width_words, rows, cu.CUstream(stream_handle)),
          "cuMemsetD2D32Async")


def copy_rows_to_host(pointer: int, pitch: int, width: int, rows: int) -> np.ndarray:
    """Copy `width` bytes from each of `rows` rows (`pitch` bytes apart) into a (rows, width) array."""
    out = np.empty((rows, width), np.uint8)
    if rows == 0 or width == 0:
        return out
    cu = _driver()
    copy = cu.CUDA_MEMCPY2D()
    copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.srcDevice = pointer
    copy.srcPitch = pitch
    copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_HOST
    copy.dstHost = out.ctypes.data
    copy.dstPitch = width
    copy.WidthInBytes = width
    copy.Height = rows
    check(cu.cuMemcpy2D(copy), "cuMemcpy2D")
    return out


class context_current:
    """Make a context current for a block (the collection runs outside the launch's thread)."""

    def __init__(self, context_handle: int):
        self.context = _driver().CUcontext(context_handle)

    def __enter__(self):
        check(_driver().cuCtxPushCurrent(self.context), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        _driver().cuCtxPopCurrent()


def synchronize_context(context_handle: int) -> None:
    with context_current(context_handle):
        check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")


@functools.cache
def _libcuda():
    import ctypes
    return ctypes.CDLL("libcuda.so.1")


def relaunch(api_name: str, params, function: int) -> None:
    """Call the launch entry point ``api_name`` again with a launch's own parameter struct
    (as CUPTI hands it over), ``function`` in place of its kernel. Through libcuda
    itself: cuda-python's launch calls take objects, not the driver's own structs."""
    import ctypes
    fields = [(name, kind) for name, kind in params._fields_
              if not (name == "extra" and api_name.startswith("cuLaunchCooperative"))]
    entry = getattr(_libcuda(), api_name)
    entry.argtypes, entry.restype = [kind for _, kind in fields], ctypes.c_int
    status = entry(*[function if name == "f" else getattr(params, name) for name, _ in fields])
    if status != 0:
        raise CudaError(f"{api_name} (untraced replay) failed: CUDA error {status}")


def current_context() -> int:
    """The calling thread's current context (0: none yet)."""
    context = check(_driver().cuCtxGetCurrent(), "cuCtxGetCurrent")
    return int(context) if context is not None else 0
