"""Interpreter tier: scope markers under ``TRITON_INTERPRET=1`` record host time.

The interpreter runs a kernel's program instances one after another on the CPU. A
launch of a matching kernel is noticed through Triton's pre-run hook of that kernel;
each marker then records ``time.perf_counter_ns()`` for the running program instance.
Each program instance becomes one "warp" (warp 0, SM 0) of the launch; its lifetime is
taken from its first to its last marker; a capacity keeps that many events of each
program instance and counts the rest as dropped, as the GPU tier does per warp. These
are host times, not GPU times, and the Trace says so.
"""
from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np

from . import launch_config, overhead, triton_compat
from .autotune import AutotuneWatch
from .layout import make_tag
from .options import TraceOptions
from .records import WARP_DTYPE, LaunchRecords
from .scopes import no_markers_message
from .tiers import Problem

_active: "InterpreterRecorder | None" = None


def record(scope_id: int, is_end: bool) -> None:
    """Called by a marker running in the interpreter; free when no trace is active."""
    recorder = _active
    if recorder is not None:
        recorder.add(scope_id, is_end)


class _Launch:
    def __init__(self, kernel: str, info: dict):
        self.kernel = kernel
        self.info = info  # the launch's config and autotune role (LaunchRecords.info)
        self.grid = (1, 1, 1)
        self.pids: list[tuple[int, int, int]] = []
        self.times: list[int] = []
        self.tags: list[int] = []


class _Current(threading.local):
    launch: _Launch | None = None  # the matching launch this thread runs, if any


class InterpreterRecorder:
    """Collects marker events of matching interpreted kernels between start() and stop()
    (a ``tiers.TracingSession``). ``options.capacity`` keeps that many events per
    program instance, as the GPU tier does per warp; the rest are counted as dropped."""

    tier = "interpreter"

    def __init__(self, options: TraceOptions):
        self.options = options
        self.interrupted = False  # an interrupt reaches the traced code itself here
        self._launched: Counter[str] = Counter()
        self._problems: list[Problem] = []
        self._records: list[LaunchRecords] = []
        self._launches: list[_Launch] = []
        self._hooked: list = []
        self._current = _Current()
        self._autotune = AutotuneWatch(options.configs)

    @property
    def launched(self) -> Counter[str]:
        return self._launched

    def start(self) -> None:
        global _active
        for kernel in triton_compat.interpreted_kernels():
            hook = self._hook_for(kernel)
            triton_compat.add_pre_run_hook(kernel, hook)
            self._hooked.append((kernel, hook))
        self._autotune.start()
        _active = self

    def stop(self) -> None:
        global _active
        if _active is self:
            _active = None
        for kernel, hook in self._hooked:
            triton_compat.remove_pre_run_hook(kernel, hook)
        self._hooked.clear()
        self._autotune.stop()
        for launch in self._launches:
            if launch.times:
                self._records.append(self._to_records(launch, self.options.capacity))
            else:
                self._problems.append(Problem("markers_not_found", launch.kernel,
                                              no_markers_message(launch.kernel, self.options.scopes)))
        self._launches.clear()

    def records(self) -> list[LaunchRecords]:
        return list(self._records)

    def problems(self) -> list[Problem]:
        return list(self._problems)

    def meta(self) -> dict:
        """``autotune`` (autotune.AutotuneWatch.meta) and ``overhead``: never measured
        here, host times of the CPU interpreter having no untraced GPU time to compare."""
        return {**self._autotune.meta(),
                "overhead": overhead.not_measured("the interpreter tier records host time on the CPU; "
                                                  "tracing cost is a GPU figure")}

    def _hook_for(self, kernel):
        name = kernel.__name__
        matches = bool(self.options.pattern.search(name))
        limit = self.options.max_launches if not self.options.configs else None

        def on_launch(*args, **kwargs):
            self._launched[name] += 1
            role = self._autotune.role(name) if matches else None
            keep = matches and self._autotune.keep(role) and (limit is None or len(self._launches) < limit)
            launch = _Launch(name, self._launch_info(kernel, role, args, kwargs)) if keep else None
            if launch is not None:
                self._launches.append(launch)
            self._current.launch = launch

        return on_launch

    @staticmethod
    def _launch_info(kernel, role, args: tuple, kwargs: dict) -> dict:
        """The launch's configuration: its constexprs, and where an autotuner launches it,
        the compile options of that autotuner's Config (the interpreter has no others)."""
        config = launch_config.make(triton_compat.interpreted_constexprs(kernel, args, kwargs), {})
        if role is None:
            return {"config": config}
        return {"config": launch_config.merged(config, role.config), "autotune": role.role}

    def add(self, scope_id: int, is_end: bool) -> None:
        now = time.perf_counter_ns()
        launch = self._current.launch
        scopes = self.options.scopes
        if launch is None or (scopes is not None and scope_id not in scopes):
            return
        grid, pid = triton_compat.program_position()
        launch.grid = grid
        launch.pids.append(pid)
        launch.times.append(now)
        launch.tags.append(make_tag(scope_id, is_end))

    @staticmethod
    def _to_records(launch: _Launch, capacity: int | None) -> LaunchRecords:
        pids = np.array(launch.pids, dtype=np.int64).reshape(-1, 3)
        times = np.array(launch.times, dtype=np.int64)
        tags = np.array(launch.tags, dtype=np.uint32)
        # Program instances run one after another, but group by instance to be sure.
        key = (pids[:, 2] * launch.grid[1] + pids[:, 1]) * launch.grid[0] + pids[:, 0]
        order = np.argsort(key, kind="stable")
        key, times, tags, pids = key[order], times[order], tags[order], pids[order]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        last = np.append(first[1:], len(key)) - 1
        attempted = last - first + 1
        kept = attempted if capacity is None else np.minimum(attempted, capacity)
        keep = np.arange(len(key)) - np.repeat(first, attempted) < np.repeat(kept, attempted)
        warps = np.zeros(len(first), WARP_DTYPE)
        warps["block_x"], warps["block_y"], warps["block_z"] = pids[first, 0], pids[first, 1], pids[first, 2]
        warps["gt_entry"] = warps["ck_entry"] = times[first]
        warps["gt_exit"] = warps["ck_exit"] = times[last]
        warps["n_events"] = kept
        warps["n_dropped"] = attempted - kept
        return LaunchRecords(kernel=launch.kernel, grid=launch.grid, block=(1, 1, 1), capacity=capacity or 0,
                             warps=warps, cycles=times[keep], tags=tags[keep],
                             info={"device": "Triton interpreter (CPU)", **launch.info})
