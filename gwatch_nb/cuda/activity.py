"""Kernel times from CUPTI's activity records: when each kernel began and ended on the GPU.

A CUDA event pair around a launch times whatever the stream does between the two events,
and a traced launch's callback runs on the host between them: when the callback outlasts the
work queued before it, the GPU idles and the events time the host. The activity records of
kind CONCURRENT_KERNEL carry the GPU's own start and end of each kernel, with the launch's
correlation id (the one CUPTI's launch callbacks see), so traced and untraced launches are
timed alike, and nothing on the host enters either figure."""
from __future__ import annotations

import ctypes
import functools
import threading

from ..errors import CuptiUnavailableError
from . import cupti

KIND_CONCURRENT_KERNEL = 10
FLUSH_FORCED = 1
#: Offsets in a kernel record: the same in CUpti_ActivityKernel4 through 10 (CUPTI 12 and 13).
_START, _END, _CORRELATION, _NAME = 16, 24, 92, 104
BUFFER_BYTES = 4 << 20
_ALIGNMENT = 8  # ACTIVITY_RECORD_ALIGNMENT

_REQUESTED = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                              ctypes.POINTER(ctypes.c_size_t))
_COMPLETED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                              ctypes.c_size_t)


def _ms(start_ns: int, end_ns: int) -> float:
    return (end_ns - start_ns) / 1e6


class _Kernel(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32)]


class KernelClock:
    """The process's kernel activity records, collected while at least one user holds the clock
    (``start()`` and ``stop()`` nest). The records kept are those of the launches a user asked
    for by correlation id (``watch``), of every kernel of a name (``watch_name``: launches made
    inside a launch callback, whose ids no callback tells), or of every kernel while a user
    asked for all (``start(every_kernel=True)``). After ``flush()``, ``take(correlation)`` gives a
    finished kernel's GPU time in ms (None where no record came) and ``take_following`` the
    kernels of a name that ran after it."""

    def __init__(self):
        self._lib = None
        self._users = 0
        self._every_kernel = 0  # users that keep every kernel's record
        self._watched: set[int] = set()
        self._names: set[str] = set()
        self._lock = threading.Lock()
        self._buffers: dict[int, ctypes.Array] = {}  # address -> the buffer CUPTI is filling
        # Correlation id -> its kernels' (start ns, end ns, name): one, or more where launches made
        # inside a callback share the id of the launch whose callback made them.
        self._times: dict[int, list[tuple[int, int, str]]] = {}
        self._ended: dict[int, int] = {}  # correlation id -> the end ns of the kernel take() gave
        self._on_requested, self._on_completed = _REQUESTED(self._requested), _COMPLETED(self._completed)

    def start(self, every_kernel: bool = False) -> None:
        with self._lock:
            if self._users == 0:
                lib = self._library()
                self._check(lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL), "cuptiActivityEnable")
            self._users += 1
            self._every_kernel += every_kernel

    def stop(self, every_kernel: bool = False) -> None:
        """One user done; after the last, collecting stops and the records not taken go."""
        with self._lock:
            self._users -= 1
            self._every_kernel -= every_kernel
            last = self._users == 0
        if last:
            self.flush()
            self._lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
            with self._lock:
                for kept in (self._times, self._ended, self._watched, self._names):
                    kept.clear()

    def watch(self, correlation: int) -> None:
        """Keep the record of this launch (called before the kernel can have run: at its launch)."""
        with self._lock:
            self._watched.add(correlation)

    def watch_name(self, name: str) -> None:
        """Keep the records of every kernel named `name` from now on."""
        with self._lock:
            self._names.add(name)

    def flush(self) -> None:
        """Hand over every record of the kernels that have finished (synchronize first)."""
        if self._lib is not None:
            self._lib.cuptiActivityFlushAll(FLUSH_FORCED)

    def take(self, correlation: int) -> float | None:
        with self._lock:
            self._watched.discard(correlation)
            found = self._times.get(correlation)
            if not found:
                return None
            found.sort()
            start, end, _ = found.pop(0)  # the launch itself ran before any it made in its callback
            if not found:
                del self._times[correlation]
            self._ended[correlation] = end
        return _ms(start, end)

    def take_following(self, correlation: int, name: str, count: int) -> list[float]:
        """The GPU times in ms of the first `count` kernels named `name` (``watch_name``) that
        began after the kernel of launch `correlation` ended (``take`` gave it; fewer where fewer
        came)."""
        with self._lock:
            after = self._ended.get(correlation)
            if after is None:
                return []
            found = sorted((start, c, k) for c, kernels in self._times.items()
                           for k, (start, _, n) in enumerate(kernels) if n == name and start >= after)[:count]
            times = [self._times[c][k] for _, c, k in found]
            for _, c, k in sorted(found, key=lambda f: -f[2]):  # the later ones first, so indices hold
                del self._times[c][k]
            self._times = {c: kernels for c, kernels in self._times.items() if kernels}
        return [_ms(start, end) for start, end, _ in times]

    def take_all(self) -> list[tuple[str, float]]:
        """Every kernel recorded and not yet taken, as (name, ms), in the order they began."""
        with self._lock:
            found = sorted(k for kernels in self._times.values() for k in kernels)
            self._times = {}
        return [(name, _ms(start, end)) for start, end, name in found]

    def _library(self):
        if self._lib is None:
            lib = cupti.load().lib
            lib.cuptiActivityEnable.argtypes = lib.cuptiActivityDisable.argtypes = [ctypes.c_int]
            lib.cuptiActivityFlushAll.argtypes = [ctypes.c_uint32]
            lib.cuptiActivityRegisterCallbacks.argtypes = [_REQUESTED, _COMPLETED]
            lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                                       ctypes.POINTER(ctypes.POINTER(_Kernel))]
            self._check(lib.cuptiActivityRegisterCallbacks(self._on_requested, self._on_completed),
                        "cuptiActivityRegisterCallbacks")
            self._lib = lib
        return self._lib

    @staticmethod
    def _check(code: int, what: str) -> None:
        if code != 0:
            raise CuptiUnavailableError(f"{what} failed: {cupti.load().result_string(code)}")

    def _requested(self, buffer, size, max_records) -> None:
        memory = (ctypes.c_uint8 * (BUFFER_BYTES + _ALIGNMENT))()
        address = ctypes.addressof(memory)
        aligned = address + (-address % _ALIGNMENT)
        with self._lock:
            self._buffers[aligned] = memory
        buffer[0], size[0], max_records[0] = aligned, BUFFER_BYTES, 0

    def _completed(self, context, stream, buffer, size, valid) -> None:
        record = ctypes.POINTER(_Kernel)()
        found = []
        while valid and self._lib.cuptiActivityGetNextRecord(buffer, valid, ctypes.byref(record)) == 0:
            address = ctypes.addressof(record.contents)
            if record.contents.kind != KIND_CONCURRENT_KERNEL:
                continue
            start, end = (ctypes.c_uint64.from_address(address + o).value for o in (_START, _END))
            correlation = ctypes.c_uint32.from_address(address + _CORRELATION).value
            name = ctypes.c_char_p.from_address(address + _NAME).value or b"?"
            if start and end >= start:  # a kernel that never finished has no end
                found.append((correlation, (start, end, name.decode(errors="replace"))))
        with self._lock:
            for correlation, kernel in found:
                if self._every_kernel or correlation in self._watched or kernel[2] in self._names:
                    self._times.setdefault(correlation, []).append(kernel)
            self._buffers.pop(buffer, None)


@functools.cache
def clock() -> KernelClock:
    """The process's one kernel clock (CUPTI takes one pair of buffer callbacks per process)."""
    return KernelClock()
