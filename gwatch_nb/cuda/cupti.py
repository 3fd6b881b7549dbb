"""CUPTI through ctypes: find and load libcupti, subscribe to driver-API launch callbacks.

CUPTI has no official Python binding in cuda-python, and we need only a handful of its
callback functions and structures; they are declared here from cupti_callbacks.h."""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import site
import sys

from ..errors import CuptiBusyError, CuptiUnavailableError

CUPTI_API_ENTER = 0
CUPTI_API_EXIT = 1
DOMAIN_DRIVER_API = 1

#: Driver-API callback ids of the kernel launches we watch, and the layout of their params.
LAUNCH_CBIDS = {
    307: "cuLaunchKernel",
    442: "cuLaunchKernel_ptsz",
    477: "cuLaunchCooperativeKernel",
    478: "cuLaunchCooperativeKernel_ptsz",
    652: "cuLaunchKernelEx",
    653: "cuLaunchKernelEx_ptsz",
}
LAUNCH_EX_CBIDS = frozenset({652, 653})

_SUCCESS = 0
_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39


class CallbackData(ctypes.Structure):
    """CUpti_CallbackData."""
    _fields_ = [
        ("callbackSite", ctypes.c_int),
        ("functionName", ctypes.c_char_p),
        ("functionParams", ctypes.c_void_p),
        ("functionReturnValue", ctypes.c_void_p),
        ("symbolName", ctypes.c_char_p),
        ("context", ctypes.c_void_p),
        ("contextUid", ctypes.c_uint32),
        ("correlationData", ctypes.c_void_p),
        ("correlationId", ctypes.c_uint32),
    ]


class LaunchKernelParams(ctypes.Structure):
    """cuLaunchKernel_params (the cooperative variant is the same without `extra`)."""
    _fields_ = [
        ("f", ctypes.c_void_p),
        ("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
        ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
        ("sharedMemBytes", ctypes.c_uint),
        ("hStream", ctypes.c_void_p),
        ("kernelParams", ctypes.c_void_p),
        ("extra", ctypes.c_void_p),
    ]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [
        ("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
        ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
        ("sharedMemBytes", ctypes.c_uint),
        ("hStream", ctypes.c_void_p),
        ("attrs", ctypes.c_void_p),
        ("numAttrs", ctypes.c_uint),
    ]


class LaunchKernelExParams(ctypes.Structure):
    """cuLaunchKernelEx_params."""
    _fields_ = [
        ("config", ctypes.POINTER(LaunchConfig)),
        ("f", ctypes.c_void_p),
        ("kernelParams", ctypes.c_void_p),
        ("extra", ctypes.c_void_p),
    ]


class _SubscriberParams(ctypes.Structure):
    """CUpti_SubscriberParams (cuptiSubscribe_v2, CUPTI 12.8 and later)."""
    _fields_ = [
        ("structSize", ctypes.c_size_t),
        ("subscriberName", ctypes.c_char_p),
        ("oldSubscriberName", ctypes.c_void_p),
        ("oldSubscriberSize", ctypes.c_size_t),
    ]


CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)


def candidate_paths() -> list[str]:
    """Where libcupti may be, best first: $GWATCH_CUPTI_PATH alone when it is set; else the
    copy this process has already loaded, the CUDA wheels (torch's own dependency), a CUDA
    toolkit, the system's search path."""
    explicit = os.environ.get("GWATCH_CUPTI_PATH")
    if explicit:
        return [explicit]
    found: list[str] = []
    try:
        with open("/proc/self/maps") as maps:
            found += sorted({line.split()[-1] for line in maps if "libcupti.so" in line})
    except OSError:
        pass
    roots = list(dict.fromkeys(site.getsitepackages() + [site.getusersitepackages()] + sys.path))
    for root in roots:
        for pattern in ("nvidia/cu13/lib/libcupti.so*", "nvidia/cuda_cupti/lib/libcupti.so*",
                        "nvidia/cu12/lib/libcupti.so*"):
            found += sorted(glob.glob(os.path.join(root, pattern)), reverse=True)
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    for pattern in ("extras/CUPTI/lib64/libcupti.so*", "lib64/libcupti.so*", "lib/libcupti.so*"):
        found += sorted(glob.glob(os.path.join(cuda_home, pattern)), reverse=True)
    found.append("libcupti.so")
    return list(dict.fromkeys(found))


class Cupti:
    """A loaded libcupti with the few functions tracing needs."""

    def __init__(self, path: str | None = None):
        errors = []
        for candidate in [path] if path else candidate_paths():
            try:
                self.lib = ctypes.CDLL(candidate)
                self.path = candidate
                break
            except OSError as error:
                errors.append(f"{candidate}: {error}")
        else:
            raise CuptiUnavailableError(
                "CUPTI library not found; install the CUDA wheels (pip install nvidia-cuda-cupti) or set "
                "GWATCH_CUPTI_PATH to libcupti.so" + (f" (tried {len(errors)} paths)" if errors else ""))
        lib = self.lib
        lib.cuptiSubscribe.argtypes = [ctypes.POINTER(ctypes.c_void_p), CALLBACK, ctypes.c_void_p]
        lib.cuptiUnsubscribe.argtypes = [ctypes.c_void_p]
        lib.cuptiEnableCallback.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.cuptiGetResultString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self._has_v2 = hasattr(lib, "cuptiSubscribe_v2")
        if self._has_v2:
            lib.cuptiSubscribe_v2.argtypes = [ctypes.POINTER(ctypes.c_void_p), CALLBACK, ctypes.c_void_p,
                                              ctypes.POINTER(_SubscriberParams)]

    def result_string(self, code: int) -> str:
        text = ctypes.c_char_p()
        if self.lib.cuptiGetResultString(code, ctypes.byref(text)) == _SUCCESS and text.value:
            return text.value.decode(errors="replace")
        return f"CUPTI error {code}"

    def subscribe(self, callback) -> ctypes.c_void_p:
        """Subscribe `callback` (a CALLBACK); CuptiBusyError if another tool holds CUPTI."""
        handle = ctypes.c_void_p()
        holder = ""
        if self._has_v2:
            old = ctypes.create_string_buffer(128)
            params = _SubscriberParams(ctypes.sizeof(_SubscriberParams), b"gwatch-nb", ctypes.addressof(old),
                                       len(old))
            code = self.lib.cuptiSubscribe_v2(ctypes.byref(handle), callback, None, ctypes.byref(params))
            holder = old.value.decode(errors="replace").strip()
        else:
            code = self.lib.cuptiSubscribe(ctypes.byref(handle), callback, None)
        if code == _MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
            who = f" ({holder})" if holder and "not provided" not in holder else ""
            raise CuptiBusyError(
                f"CUPTI is held by another tool in this process{who}: Proton or Nsight while they run, or "
                "torch.profiler, which keeps it once used; trace in a fresh process (restart the kernel)")
        if code != _SUCCESS:
            raise CuptiUnavailableError(f"cuptiSubscribe failed: {self.result_string(code)}")
        return handle

    def enable(self, handle: ctypes.c_void_p, cbids, on: bool) -> None:
        for cbid in cbids:
            code = self.lib.cuptiEnableCallback(1 if on else 0, handle, DOMAIN_DRIVER_API, cbid)
            if code != _SUCCESS and on:
                raise CuptiUnavailableError(f"cuptiEnableCallback({cbid}) failed: {self.result_string(code)}")

    def unsubscribe(self, handle: ctypes.c_void_p) -> None:
        self.lib.cuptiUnsubscribe(handle)


@functools.cache
def load() -> Cupti:
    """The process's CUPTI, loaded once (a failure is not kept: the next call tries again)."""
    return Cupti()


class LaunchCallbacks:
    """`on_callback` (called as CALLBACK says) subscribed to the driver's kernel launches, from
    construction, with the callbacks off, through ``on()`` to ``release()``; CuptiBusyError at
    construction where another tool holds CUPTI. The trace session and the stall session each
    hold one while they run."""

    def __init__(self, on_callback):
        self._cupti = load()
        self._callback = CALLBACK(on_callback)  # kept for good: CUPTI holds only its address
        self._handle = self._cupti.subscribe(self._callback)
        self.subscribed = True

    def on(self) -> None:
        self._cupti.enable(self._handle, LAUNCH_CBIDS, True)

    def release(self) -> None:
        """Callbacks off and the subscription given back (once; later calls do nothing)."""
        if not self.subscribed:
            return
        self.subscribed = False
        try:
            self._cupti.enable(self._handle, LAUNCH_CBIDS, False)
        finally:
            self._cupti.unsubscribe(self._handle)
