"""Stall reasons of the kernel as the user runs it: every launch whose kernel name matches is
PC-sampled on its own, with no probe in it, and its samples are charged to the scopes its
markers delimit in the cubin Triton loaded (sass/scope_map.py).

The launch runs a copy of that very cubin, loaded again once sampling is on: CUPTI gives no
PCs for a module it did not see load (pc_sampling.Sampler), and the user's module may have
loaded after an earlier sampling in the process. The copy's code is the cubin's, byte for
byte, with the original function's settable attributes."""
from __future__ import annotations

import ctypes
import re
import threading

from .. import sentinels
from ..errors import CuptiUnavailableError, TraceFailedError
from ..sass.scope_map import PcOwners
from ..sources import TritonSources
from ..stall_reasons import OUTSIDE
from . import cupti, driver, stall_sampling
from .sass_session import callsites_of, markers_of, placing_lines
from .session import launch_view


class StallSession:
    """PC-sample the matching launches between start() and stop()."""

    def __init__(self, pattern: re.Pattern, period: int | None):
        self.pattern = pattern
        self.sampling = stall_sampling.LaunchSampling(period)
        self.launched: dict[str, int] = {}
        self._sources = TritonSources()
        self._open: dict[int, tuple[int, int, str]] = {}  # correlation id -> (context, function, name)
        self._copies: dict[tuple[int, int], tuple[object, int] | None] = {}  # (context, function) -> (module, copy)
        self._sampled: list[tuple[int, int, str, object]] = []  # (context, function, name, pc_sampling.Range)
        self._lock = threading.Lock()
        self._callbacks: cupti.LaunchCallbacks | None = None  # from start()
        self.failure = ""  # the first failure inside a callback

    def start(self) -> None:
        driver.init()
        self._callbacks = cupti.LaunchCallbacks(self._on_callback)
        try:
            self._sources.install()
            self._callbacks.on()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Callbacks off, sampling off (the sampled launches are over: each bracket waited for
        its own), the copies unloaded."""
        if self._callbacks is None or not self._callbacks.subscribed:
            return
        try:
            self._callbacks.release()
        finally:
            self._sources.uninstall()
            self.sampling.close()
            for copy in self._copies.values():
                if copy is not None:
                    driver.unload(copy[0])
            self._copies.clear()

    def _on_callback(self, userdata, domain, cbid, cbdata) -> None:
        try:
            data = ctypes.cast(cbdata, ctypes.POINTER(cupti.CallbackData)).contents
            name = data.symbolName.decode(errors="replace") if data.symbolName else "<unnamed>"
            with self._lock:
                if data.callbackSite == cupti.CUPTI_API_ENTER:
                    self.launched[name] = self.launched.get(name, 0) + 1
                    context = data.context or 0
                    if self.pattern.search(name) and self.sampling.prepare(context):
                        view = launch_view(cbid, data.functionParams)
                        copy = self._copy(context, view.function)
                        if copy is not None:
                            view.params.f = copy
                        if self.sampling.begin(context):
                            self._open[data.correlationId] = (context, view.function, name)
                elif data.correlationId in self._open:
                    context, function, name = self._open.pop(data.correlationId)
                    sampled = self.sampling.end(context)
                    if sampled is not None:
                        self._sampled.append((context, function, name, sampled))
        except Exception as error:  # never into the driver: the launch goes on, the failure is told
            self.failure = self.failure or f"stall sampling failed inside a launch callback: {error!r}"

    def _copy(self, context: int, function: int) -> int | None:
        """The kernel's cubin loaded again in this session (None: not a Triton kernel, or no cubin)."""
        key = (context, function)
        if key not in self._copies:
            source = self._sources.find(function)
            self._copies[key] = None
            if source is not None and source.cubin is not None:
                module = driver.load_cubin(source.cubin)
                copy = driver.get_function(module, source.name)
                driver.copy_attributes(function, copy)
                self._copies[key] = (module, int(copy))
        found = self._copies[key]
        return None if found is None else found[1]

    def samples(self) -> dict | None:
        """Charge every sampled launch's samples to its kernel's scopes; the stall meta
        (stall_reasons.StallCounts.meta), None where no launch matched. Raises
        CuptiUnavailableError where CUPTI would not sample."""
        owners: dict[tuple[int, int], object] = {}
        for context, function, name, sampled in self._sampled:
            if (context, function) not in owners:
                owners[(context, function)] = self._owners(function, name)
            self.sampling.add(name, context, sampled, owners[(context, function)])
        meta = self.sampling.meta()
        if meta is None and (self.sampling.refused or self.failure):
            raise CuptiUnavailableError(self.sampling.refused or self.failure)
        return meta

    def _owners(self, function: int, name: str):
        """What charges a PC of this kernel to a scope: its markers in the cubin Triton loaded,
        each instruction the scope whose sentinels delimit its PTX instruction where the sass
        tier would place the scopes so (else its source line's); a kernel not Triton's
        (or whose cubin is not found) has every sample outside scopes."""
        source = self._sources.find(function)
        if source is None or source.cubin is None:
            return lambda pc: OUTSIDE
        source = self._sources.with_function(source, function)
        try:
            source = sentinels.ensure(source)
        except TraceFailedError:  # no sentinels to place by: the source lines do
            pass
        return PcOwners(source.cubin, name, markers_of(source), callsites_of(source), ptx=placing_lines(source))
