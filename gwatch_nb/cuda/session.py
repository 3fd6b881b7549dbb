"""A trace session: CUPTI launch callbacks swap matching kernels for instrumented copies.

While a session is active, every driver-API kernel launch in the process calls
``_on_callback``. A launch whose kernel name matches the pattern gets a trace buffer
sized from its grid and block, and its CUfunction and parameter array are replaced, in
the launch's own parameters, by the instrumented copy and the original parameters plus
the buffer's address. Every other launch runs untouched. ``stop`` turns the callbacks
off, waits for the GPU, copies the records back and frees the buffers.
"""
from __future__ import annotations

import ctypes
import os
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import launch_config, layout, overhead, records, sentinels, triton_compat
from ..autotune import AutotuneWatch
from ..errors import CuptiUnavailableError, TraceFailedError
from ..instrumentation_cost import warning as cost_warning
from ..options import TraceOptions
from ..scopes import no_markers_message
from ..sources import TritonSources
from ..tiers import Problem
from . import activity, cupti, driver, stall_sampling
from .instrumented import InstrumentedKernel, cost, instrument_kernel

#: Default per-launch budget for trace buffers (the capacity adapts to the warp count).
BUFFER_BUDGET_BYTES = 256 << 20
#: Device memory pending launches may hold before the session collects them early.
PENDING_LIMIT_BYTES = 1 << 30
MIN_CAPACITY, MAX_CAPACITY = 64, 1 << 16
#: Untraced launches timed per compiled kernel, to measure what tracing cost.
MAX_TIMED_UNTRACED = 256


def default_capacity(num_slots: int, free_bytes: int, min_record_events: int, most_events: int | None = None) -> int:
    """Events per warp: as many as the records of min(256 MiB, an eighth of free memory)
    hold, for a kernel whose records each cover at least ``min_record_events`` markers; no
    more than ``most_events`` (rounded up to even), where the tier knows a warp cannot take
    more: slots sized by need keep the warps' records close together in memory."""
    budget = min(BUFFER_BUDGET_BYTES, free_bytes // 8)
    fit = budget // max(1, num_slots * layout.RECORD_BYTES) * min_record_events - (layout.GROUP_MAX_EVENTS - 1)
    capacity = min(MAX_CAPACITY, max(MIN_CAPACITY, fit))
    return int(capacity if most_events is None else min(capacity, (most_events + 1) & ~1))


#: 4 GiB: the sass tier's probes advance a record address by its low word, so no slot may cross
#: a multiple of this.
ADDRESS_WINDOW = 1 << 32


def _allocate(nbytes: int, one_window: bool) -> int:
    """Device memory for a buffer; with `one_window`, inside one 4 GiB window (an allocation
    that crosses a boundary is kept until one that does not is found, then freed)."""
    pointer = driver.alloc(nbytes)
    if not one_window or pointer // ADDRESS_WINDOW == (pointer + nbytes - 1) // ADDRESS_WINDOW:
        return pointer
    if nbytes > ADDRESS_WINDOW:
        driver.free(pointer)
        raise driver.CudaError(f"a trace buffer of {nbytes} bytes cannot fit in one 4 GiB window")
    held = [pointer]
    try:
        while True:
            pointer = driver.alloc(nbytes)
            if pointer // ADDRESS_WINDOW == (pointer + nbytes - 1) // ADDRESS_WINDOW:
                return pointer
            held.append(pointer)
    finally:
        for crossing in held:
            driver.free(crossing)


def new_buffer(capacity: int, records: int, num_slots: int, stream: int, one_window: bool = False) -> int:
    """A launch's trace buffer: its global header written, every warp header zeroed
    (stream-ordered before the launch)."""
    pointer = _allocate(layout.buffer_bytes(records, num_slots), one_window)
    driver.fill32_2d_async(pointer + layout.GLOBAL_HEADER_BYTES + layout.header_offset(records),
                           layout.slot_bytes(records), 0, layout.SLOT_HEADER_BYTES // 4, num_slots, stream)
    header = np.frombuffer(layout.global_header(capacity, records, num_slots), np.uint8)
    driver.copy_to_device_async(pointer, header, stream)
    return pointer


def copy_back(launch: "PendingLaunch") -> tuple[np.ndarray, np.ndarray]:
    """A finished launch's buffer as the GPU left it: every warp's header, as (slots, 64)
    bytes, and the records the warps wrote, as (slots, most written) RECORD_DTYPE."""
    own_header = driver.copy_rows_to_host(launch.pointer, layout.GLOBAL_HEADER_BYTES,
                                          layout.GLOBAL_HEADER_BYTES, 1).tobytes()
    if own_header != layout.global_header(launch.capacity, launch.records, launch.num_slots):
        raise driver.CudaError("the trace buffer's header was overwritten")
    slots = launch.pointer + layout.GLOBAL_HEADER_BYTES
    slot = layout.slot_bytes(launch.records)
    headers = driver.copy_rows_to_host(slots + layout.header_offset(launch.records), slot, layout.SLOT_HEADER_BYTES,
                                       launch.num_slots)
    try:
        headers = launch.buffer.host_headers(headers, launch.pointer, launch.capacity, launch.records)
    except ValueError as error:
        raise records.CorruptTraceError(f"trace buffer is corrupt: {error}") from None
    width = min(launch.records, int(records.records_written(headers).max(initial=0)))
    recs = driver.copy_rows_to_host(slots, slot, width * layout.RECORD_BYTES, launch.num_slots)
    return headers, recs.view(layout.RECORD_DTYPE)


@dataclass
class PendingLaunch:
    """A traced launch whose buffer is still on the GPU."""
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    capacity: int
    records: int          # per warp slot
    num_slots: int
    table: records.SiteTable
    pointer: int
    nbytes: int
    context: int
    stream: int
    info: dict
    key: tuple[int, int] = (0, 0)                   # (context, original CUfunction): one compiled kernel
    keep_alive: list = field(default_factory=list)  # parameter arrays the driver reads at launch
    correlation: int = 0                            # CUPTI's id of the launch: its kernel record's
    host_seconds: float = 0.0                       # time spent in the launch callbacks
    failed: str | None = None
    sampled: bool = False                           # PC sampling brackets the launch (stalls=True)
    stall_samples: object = None                    # what it gave (pc_sampling.Range)
    buffer: object = layout.PTX_BUFFERS             # the tier's buffer layout (layout.PtxBuffers / SassBuffers)

    def trace_arguments(self) -> tuple[ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32]:
        """The values of the parameters the tier appends to an instrumented kernel, in its
        order (layout's ``arguments``: a pointer, then two 32-bit values)."""
        pointer, first, second = self.buffer.arguments(self.pointer, self.capacity, self.records)
        return ctypes.c_uint64(pointer), ctypes.c_uint32(first), ctypes.c_uint32(second)


@dataclass
class _LaunchView:
    function: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    stream: int
    dynamic_shared_bytes: int
    kernel_params: int
    has_extra: bool
    params: ctypes.Structure


def launch_view(cbid: int, params_pointer: int) -> _LaunchView:
    if cbid in cupti.LAUNCH_EX_CBIDS:
        p = ctypes.cast(params_pointer, ctypes.POINTER(cupti.LaunchKernelExParams)).contents
        c = p.config.contents
        return _LaunchView(p.f or 0, (c.gridDimX, c.gridDimY, c.gridDimZ), (c.blockDimX, c.blockDimY, c.blockDimZ),
                           c.hStream or 0, c.sharedMemBytes, p.kernelParams or 0, bool(p.extra), p)
    p = ctypes.cast(params_pointer, ctypes.POINTER(cupti.LaunchKernelParams)).contents
    cooperative = cupti.LAUNCH_CBIDS[cbid].startswith("cuLaunchCooperative")
    return _LaunchView(p.f or 0, (p.gridDimX, p.gridDimY, p.gridDimZ), (p.blockDimX, p.blockDimY, p.blockDimZ),
                       p.hStream or 0, p.sharedMemBytes, p.kernelParams or 0, False if cooperative else bool(p.extra),
                       p)


class TraceSession:
    """Trace matching launches between start() and stop(); records() gives what they left
    (a ``tiers.TracingSession``)."""

    tier = "ptx"

    def __init__(self, options: TraceOptions):
        self.options = options
        # An even number of events: a record never holds half of what the host keeps.
        self._capacity = None if options.capacity is None else (options.capacity + 1) & ~1
        self.interrupted = False
        self._launched: Counter[str] = Counter()  # every kernel that launched, matching or not
        self._problems: dict[tuple[str, str], Problem] = {}  # one per (kind, kernel)
        self._costs: dict[str, dict] = {}  # kernel -> what instrumenting changed (instrumented.cost)
        self._records: list[records.LaunchRecords] = []
        self._pending: list[PendingLaunch] = []
        self._pending_bytes = 0  # device memory their buffers hold
        self._by_correlation: dict[int, PendingLaunch] = {}
        self._skip: set[tuple[int, int]] = set()  # (context, function) never to instrument
        self._ready: dict[tuple[int, int], InstrumentedKernel] = {}  # (context, function) -> its copy
        self._devices: dict[int, dict] = {}
        self._traced = 0
        self._lock = threading.RLock()
        self._sources = TritonSources()
        self._callbacks: cupti.LaunchCallbacks | None = None  # from start()
        self._autotune = AutotuneWatch(options.configs)
        self._metadata: dict[tuple[int, int], dict] = {}  # compiled kernel -> its Triton compile metadata
        # What tracing cost: the correlation ids of untraced launches, by compiled kernel, whose GPU
        # times the kernel clock gives (activity.py).
        self._clock: activity.KernelClock | None = activity.clock()
        self._untimed_because = ""  # why kernel times are not taken, where they are not
        self._untraced_launches: dict[tuple[int, int], list[int]] = {}
        # baseline=N: per compiled kernel, its traced launch replayed (correlation id, kernel name),
        # None once the replays are timed (each kernel is replayed once).
        self._replays: dict[tuple[int, int], tuple[int, str] | None] = {}
        self._untraced_ms: dict[tuple[int, int], list[float]] = {}
        self._replayed_ms: dict[tuple[int, int], list[float]] = {}
        self._traced_ms: dict[tuple[int, int], list[float]] = {}
        self._replaying: int | None = None  # the thread making the session's own replays
        self._configs: dict[tuple[int, int], dict] = {}
        self._sampling = stall_sampling.LaunchSampling(options.stall_period) if options.stalls else None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Subscribe to CUPTI and turn on launch callbacks; raises before anything runs."""
        driver.init()
        self._callbacks = cupti.LaunchCallbacks(self._on_callback)
        try:
            self._clock.start()
        except CuptiUnavailableError as error:  # the trace goes on; its cost is not measured
            self._clock, self._untimed_because = None, str(error)
        try:
            self._sources.install()
            self._autotune.start()
            self._callbacks.on()
        except BaseException:
            self._autotune.stop()
            self._release_cupti()
            self._stop_clock()
            raise

    def stop(self) -> None:
        """Callbacks off, nothing swapped any more, records collected, buffers freed."""
        if self._callbacks is None or not self._callbacks.subscribed:
            return
        try:
            self._release_cupti()
        finally:
            self._autotune.stop()
            try:
                with self._lock:
                    self._drain()
            finally:
                self._stop_clock()
                if self._sampling is not None:
                    self._sampling.close()

    def _stop_clock(self) -> None:
        if self._clock is not None:
            self._clock.stop()
            self._clock = None

    def _kernel_ms(self, correlation: int) -> float | None:
        """A finished launch's kernel time, once the clock has flushed (None: not timed)."""
        return None if self._clock is None else self._clock.take(correlation)

    def _watch(self, correlation: int) -> None:
        if self._clock is not None:
            self._clock.watch(correlation)

    def _release_cupti(self) -> None:
        try:
            self._callbacks.release()
        finally:
            self._sources.uninstall()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def records(self) -> list[records.LaunchRecords]:
        return list(self._records)

    @property
    def launched(self) -> Counter[str]:
        return self._launched

    def problems(self) -> list[Problem]:
        return list(self._problems.values())

    def meta(self) -> dict:
        """``instrumentation``: per traced kernel, what instrumenting changed
        (instrumentation_cost says the shape); ``autotune`` (autotune.AutotuneWatch.meta);
        ``overhead``: what tracing cost (overhead.py says the shape); with stalls=True,
        ``stalls``: the sampled launches' stall reasons per scope (stall_reasons.py)."""
        out = {"instrumentation": dict(self._costs), **self._autotune.meta(), "overhead": self._overhead()}
        stalls = self._sampling.meta() if self._sampling is not None else None
        if stalls:
            out["stalls"] = stalls
        return out

    def _overhead(self) -> dict:
        if self._untimed_because:
            return overhead.not_measured(f"kernel times unavailable ({self._untimed_because})")
        if self.options.baseline:
            return overhead.measure({k: (t, self._replayed_ms.get(k, [])) for k, t in self._traced_ms.items()},
                                    "replay", "no traced launch could be replayed")
        fewer = "" if self.options.max_launches is None else f" beyond the first {self.options.max_launches}"
        return overhead.measure({k: (t, self._untraced_ms.get(k, [])) for k, t in self._traced_ms.items()}, "beside",
                                f"no untraced launch of a traced kernel and configuration ran{fewer}; "
                                "launches=N (with more launches in fn) or baseline=N measures it")

    # ------------------------------------------------------------ the callback

    def _on_callback(self, userdata, domain, cbid, cbdata) -> None:
        # Never let an exception cross into the driver: note it and let the launch go on.
        try:
            data = ctypes.cast(cbdata, ctypes.POINTER(cupti.CallbackData)).contents
            if data.callbackSite == cupti.CUPTI_API_ENTER:
                self._on_launch(cbid, data)
            else:
                self._after_launch(cbid, data)
        except KeyboardInterrupt:
            self.interrupted = True
        except Exception as error:
            self._note("internal", "?", f"tracing failed inside a launch callback: {error!r}{_raised_at(error)}")

    def _note(self, kind: str, kernel: str, message: str) -> None:
        self._problems.setdefault((kind, kernel), Problem(kind, kernel, message))

    def _on_launch(self, cbid: int, data: cupti.CallbackData) -> None:
        if self._replaying == threading.get_ident():
            return  # the session's own untraced replays (baseline=N)
        began = time.perf_counter()
        name = data.symbolName.decode(errors="replace") if data.symbolName else "<unnamed>"
        with self._lock:
            self._launched[name] += 1
            if not self.options.pattern.search(name):
                return
            view = launch_view(cbid, data.functionParams)
            context = data.context or 0
            limited = (not self.options.configs and self.options.max_launches is not None
                       and self._traced >= self.options.max_launches)
            role = self._autotune.role(name)
            wanted = self._autotune.keep(role)
            if limited or not wanted or (context, view.function) in self._skip:
                # The autotuner's benchmark launches are not timed: it flushes the L2 cache between them.
                if role is None or role.role != "benchmark":
                    self._time_untraced((context, view.function), data.correlationId)
                return
            if driver.is_capturing(view.stream):
                self._note("graph_capture", name, f"{name}: launched during CUDA graph capture; "
                           "not traced (it runs unmodified in the graph)")
                return
            if self._sampling is not None:  # before the copy loads: CUPTI samples modules it saw load
                self._sampling.prepare(context)
            kernel = self._instrumented(context, view.function, name)
            if kernel is None:
                return
            if name not in self._costs:
                self._note_cost(name, view, kernel)
            if view.kernel_params == 0 or view.has_extra:
                self._note("extra_params", name, f"{name}: launched with packed 'extra' parameters; not traced")
                return
            launch = self._prepare_buffer(name, view, context, kernel)
            if role is not None:
                launch.info["autotune"] = role.role
            # The original arguments, then the three the instrumented entry appends.
            added = launch.trace_arguments()
            params = (ctypes.c_void_p * (kernel.num_params + len(added)))()
            ctypes.memmove(params, view.kernel_params, kernel.num_params * ctypes.sizeof(ctypes.c_void_p))
            for i, value in enumerate(added):
                params[kernel.num_params + i] = ctypes.addressof(value)
            launch.keep_alive += [params, *added]
            view.params.f = kernel.handle
            view.params.kernelParams = ctypes.addressof(params)
            launch.correlation = data.correlationId
            self._watch(data.correlationId)
            launch.host_seconds += time.perf_counter() - began
            self._pending.append(launch)
            self._pending_bytes += launch.nbytes
            self._by_correlation[data.correlationId] = launch
            self._traced += 1
            if self._sampling is not None:
                launch.sampled = self._begin_sampling(launch, kernel)

    def _after_launch(self, cbid: int, data: cupti.CallbackData) -> None:
        if self._replaying == threading.get_ident():
            return
        began = time.perf_counter()
        with self._lock:
            launch = self._by_correlation.pop(data.correlationId, None)
            if launch is None:
                return
            if launch.sampled:
                launch.stall_samples = self._sampling.end(launch.context)
            status = ctypes.cast(data.functionReturnValue, ctypes.POINTER(ctypes.c_int)).contents.value
            if status != 0:
                launch.failed = f"the instrumented launch returned CUDA error {status}"
            elif self.options.baseline and launch.key not in self._replays:
                self._replay(cbid, data, launch)
            launch.keep_alive.clear()
            launch.host_seconds += time.perf_counter() - began

    def _begin_sampling(self, launch: PendingLaunch, kernel: InstrumentedKernel) -> bool:
        """Bracket a traced launch with PC sampling: only a kernel whose copy maps its PCs to
        scopes (the sass tier's); where CUPTI will not sample, one note and the trace goes on."""
        if "pc_owners" not in kernel.extra:
            self._note("stalls_not_sampled", launch.kernel, f"{launch.kernel}: traced on the ptx tier, whose rebuilt "
                       "code does not map back to the kernel's instructions; its stall reasons were not sampled")
            return False
        if self._sampling.begin(launch.context):
            return True
        self._note("stalls_unavailable", "*", f"{self._sampling.refused}; the trace went on without stall reasons")
        return False

    def _time_untraced(self, key: tuple[int, int], correlation: int) -> None:
        """Keep an untraced matching launch's correlation id: its kernel time, beside the traced
        launches of the same kernel (a launch in a graph capture has no kernel record of its own)."""
        launches = self._untraced_launches.setdefault(key, [])
        if len(launches) < MAX_TIMED_UNTRACED:
            launches.append(correlation)
            self._watch(correlation)

    def _replay(self, cbid: int, data: cupti.CallbackData, launch: "PendingLaunch") -> None:
        """Launch the original kernel ``baseline`` times more, untraced, with the traced
        launch's own arguments and launch configuration: the kernels of its name that run next
        (queued right after it, on its stream)."""
        view = launch_view(cbid, data.functionParams)
        self._replays[launch.key] = (launch.correlation, launch.kernel)
        if self._clock is not None:
            self._clock.watch_name(launch.kernel)
        self._replaying = threading.get_ident()
        try:
            for _ in range(self.options.baseline):
                driver.relaunch(cupti.LAUNCH_CBIDS[cbid], view.params, launch.key[1])
        except driver.CudaError as error:
            self._note("internal", launch.kernel, f"{launch.kernel}: {error}; tracing cost not measured")
        finally:
            self._replaying = None

    def _instrumented(self, context: int, function: int, name: str) -> InstrumentedKernel | None:
        if (context, function) in self._ready:
            return self._ready[(context, function)]
        source = self._sources.find(function)
        if source is None:
            self._skip.add((context, function))
            self._note("ptx_not_found", name, f"{name}: matched, but its PTX was not found (only Triton kernels "
                       "can be traced); it ran untraced")
            return None
        if self.options.on_instrument is not None:
            self.options.on_instrument(name)
        try:
            kernel = self._build(context, function, source)
        except TraceFailedError as error:
            self._skip.add((context, function))
            self._note(error.kind, name, str(error))
            return None
        except driver.CudaError as error:  # giving the copy the original's attributes
            self._skip.add((context, function))
            self._note("load_failed", name, f"{name}: the instrumented kernel could not be set up ({error}); "
                       "it ran untraced")
            return None
        if kernel is None:
            self._skip.add((context, function))
            self._note("markers_not_found", name, no_markers_message(name, self.options.scopes))
        else:
            self._ready[(context, function)] = kernel
            self._metadata[(context, function)] = source.metadata
        return kernel

    def _build(self, context: int, function: int, source) -> InstrumentedKernel | None:
        """The tier's instrumented copy of a kernel (None: none of its markers is traced);
        raises TraceFailedError naming the problem's kind."""
        # The markers of the kernel Triton loaded compiled to nothing: the copy rewritten here is
        # compiled again with their sentinels.
        source = sentinels.ensure(self._sources.with_function(source, function))
        return instrument_kernel(context, function, source, self.options.scopes)

    def _note_cost(self, name: str, view: _LaunchView, kernel: InstrumentedKernel) -> None:
        """Compare the instrumented copy's resources with the original's, at its first
        launch (occupancy depends on the launch's block and dynamic shared memory)."""
        threads = view.block[0] * view.block[1] * view.block[2]
        try:
            change = cost(view.function, kernel, threads, view.dynamic_shared_bytes)
        except driver.CudaError as error:  # the trace goes on without the comparison
            self._costs[name] = {}
            self._note("internal", name, f"{name}: comparing its resources with the original's failed ({error})")
            return
        self._costs[name] = change
        warning = cost_warning(name, change)
        if warning is not None:
            self._note("instrumentation_cost", name, warning)

    def _prepare_buffer(self, name: str, view: _LaunchView, context: int, kernel: InstrumentedKernel) -> PendingLaunch:
        if context not in self._devices:
            self._devices[context] = driver.device_info(driver.current_device())
            self._devices[context]["free_bytes_at_start"] = driver.free_memory()[0]
        device = self._devices[context]
        threads = view.block[0] * view.block[1] * view.block[2]
        num_slots = view.grid[0] * view.grid[1] * view.grid[2] * ((threads + 31) // 32)
        fewest = kernel.table.min_record_events
        capacity = self._capacity or default_capacity(num_slots, device["free_bytes_at_start"], fewest,
                                                      kernel.most_events)
        slot_records = kernel.buffer.slot_records(capacity, fewest)
        nbytes = layout.buffer_bytes(slot_records, num_slots)
        if self._pending and self._pending_bytes + nbytes > PENDING_LIMIT_BYTES:
            self._drain()  # keep device memory bounded when many launches are traced
        pointer = new_buffer(capacity, slot_records, num_slots, view.stream, kernel.buffer.one_window)
        info = {k: v for k, v in device.items() if k != "free_bytes_at_start"}
        info.update(tier=kernel.buffer.tier, instrumented_registers=kernel.resources["registers"],
                    instrument_seconds=round(kernel.build_seconds, 4),
                    sites=len(kernel.sites))
        return PendingLaunch(name, view.grid, view.block, capacity, slot_records, num_slots, kernel.table, pointer,
                             nbytes, context, view.stream, info, (context, view.function), buffer=kernel.buffer)

    # ------------------------------------------------------------ collection

    def _drain(self) -> None:
        """Wait for the pending launches, copy their records back, free their buffers."""
        broken = {}
        self._learn_configs({p.key for p in self._pending})
        timed = {key[0] for key in (*self._untraced_launches, *self._replays)}
        for context in {p.context for p in self._pending} | timed:
            try:
                driver.synchronize_context(context)
            except driver.CudaError as error:
                broken[context] = str(error)
        if self._clock is not None:
            self._clock.flush()
        for launch in self._pending:
            try:
                with driver.context_current(launch.context):
                    failure = launch.failed or broken.get(launch.context)
                    try:
                        if failure:
                            self._note("launch_failed", launch.kernel, f"{launch.kernel}: {failure}")
                        else:
                            collected = self.collect(launch)
                            collected.info["config"] = self._configs[launch.key]
                            if launch.stall_samples is not None:
                                self._sampling.add(launch.kernel, launch.context, launch.stall_samples,
                                                   self._ready[launch.key].extra["pc_owners"])
                            kernel_ms = self._kernel_ms(launch.correlation)
                            if kernel_ms is not None:
                                collected.info["kernel_ms"] = kernel_ms
                                self._traced_ms.setdefault(launch.key, []).append(kernel_ms)
                            self._records.append(collected)
                    finally:
                        driver.free(launch.pointer)
            except (driver.CudaError, records.CorruptTraceError) as error:
                self._note("collect_failed", launch.kernel, f"{launch.kernel}: collecting its records failed ({error})")
        self._pending.clear()
        self._pending_bytes = 0
        self._collect_timings(broken)

    def _collect_timings(self, broken: dict) -> None:
        """Untraced launches' kernel times (the GPU has passed them, the clock has their records)."""
        for key, correlations in self._untraced_launches.items():
            taken = [self._kernel_ms(c) for c in correlations]  # taken either way: the clock lets them go
            if key[0] not in broken:
                self._untraced_ms.setdefault(key, []).extend(ms for ms in taken if ms is not None)
        self._untraced_launches.clear()
        for key, replayed in self._replays.items():
            if replayed is not None and self._clock is not None:
                taken = self._clock.take_following(*replayed, self.options.baseline)
                if key[0] not in broken:
                    self._replayed_ms.setdefault(key, []).extend(taken)
                self._replays[key] = None

    def _learn_configs(self, keys: set[tuple[int, int]]) -> None:
        """Each compiled kernel's configuration (one heap scan for all new ones): its
        constexprs, where its CompiledKernel is still alive, and its compile options."""
        new = keys - self._configs.keys()
        found = triton_compat.compiled_configs([function for _, function in new]) if new else {}
        for key in new:
            metadata = self._metadata.get(key, {})
            self._configs[key] = found.get(key[1]) or launch_config.make(
                None, {k: metadata[k] for k in launch_config.OPTIONS if k in metadata})

    @staticmethod
    def collect(launch: PendingLaunch) -> records.LaunchRecords:
        headers, recs = copy_back(launch)
        warps, cycles, tags, missing = records.from_device(headers, recs, launch.capacity, launch.table)
        written = int(records.records_written(headers).sum())
        info = dict(launch.info, missing_warps=missing, buffer_bytes=launch.nbytes,
                    trace_bytes=written * layout.RECORD_BYTES + launch.num_slots * layout.SLOT_HEADER_BYTES,
                    host_callback_us=round(launch.host_seconds * 1e6, 1))
        return records.LaunchRecords(launch.kernel, launch.grid, launch.block, launch.capacity, warps, cycles,
                                     tags, info)


def _raised_at(error: BaseException) -> str:
    """ " (at gwatch_nb/FILE:LINE)": the innermost frame of this package that `error` passed
    through, which a report of an internal failure needs (the callback cannot let the traceback
    through)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ours = [(os.path.relpath(os.path.abspath(f.filename), package), f.lineno)
            for f in traceback.extract_tb(error.__traceback__)
            if os.path.abspath(f.filename).startswith(package + os.sep)]
    if not ours:
        return ""
    path, line = ours[-1]
    return f" (at gwatch_nb/{path}:{line})"
