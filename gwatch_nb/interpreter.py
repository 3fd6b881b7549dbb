"""Interpreter tier: scope markers under ``TRITON_INTERPRET=1`` record host time.

The interpreter runs a kernel's program instances one after another on the CPU. A
launch of a matching kernel is noticed through Triton's pre-run hook of that kernel;
each marker then records ``time.perf_counter_ns()`` for the running program instance.
Each program instance becomes one "warp" (warp 0, SM 0) of the launch; its lifetime is
taken from its first to its last marker. These are host times, not GPU times, and the
Trace says so.
"""
from __future__ import annotations

import gc
import re
import threading
import time

import numpy as np

from .layout import make_tag
from .records import WARP_DTYPE, LaunchRecords
from .scopes import no_markers_message

_active: "InterpreterRecorder | None" = None


def record(scope_id: int, is_end: bool) -> None:
    """Called by a marker running in the interpreter; free when no trace is active."""
    recorder = _active
    if recorder is not None:
        recorder.add(scope_id, is_end)


def interpreted_kernels() -> list:
    """Every Triton kernel object of this process that runs on the interpreter."""
    from triton.runtime.interpreter import InterpretedFunction
    # type() rather than isinstance(): some objects warn when their __class__ is read.
    return [obj for obj in gc.get_objects() if issubclass(type(obj), InterpretedFunction)]


class _Launch:
    def __init__(self, kernel: str):
        self.kernel = kernel
        self.grid = (1, 1, 1)
        self.pids: list[tuple[int, int, int]] = []
        self.times: list[int] = []
        self.tags: list[int] = []


class InterpreterRecorder:
    """Collects marker events of matching interpreted kernels between start() and stop()."""

    def __init__(self, pattern: re.Pattern, max_launches: int | None = None, scopes: frozenset | None = None):
        self.pattern = pattern
        self.max_launches = max_launches
        self.scopes = scopes  # scope ids recorded; None: all
        self.launched: dict[str, int] = {}  # every interpreted kernel seen launching, matching or not
        self.problems: dict[tuple[str, str], str] = {}  # (kind, kernel) -> one-line message
        self._launches: list[_Launch] = []
        self._hooked: list = []
        self._current = threading.local()

    def start(self) -> None:
        global _active
        for kernel in interpreted_kernels():
            hook = self._hook_for(kernel.__name__)
            kernel.add_pre_run_hook(hook)
            self._hooked.append((kernel, hook))
        _active = self

    def stop(self) -> None:
        global _active
        _active = None
        for kernel, hook in self._hooked:
            if hook in kernel.pre_run_hooks:
                kernel.pre_run_hooks.remove(hook)
        self._hooked.clear()

    def _hook_for(self, name: str):
        matches = bool(self.pattern.search(name))

        def on_launch(*args, **kwargs):
            self.launched[name] = self.launched.get(name, 0) + 1
            keep = matches and (self.max_launches is None or len(self._launches) < self.max_launches)
            launch = _Launch(name) if keep else None
            if launch is not None:
                self._launches.append(launch)
            self._current.launch = launch

        return on_launch

    def add(self, scope_id: int, is_end: bool) -> None:
        now = time.perf_counter_ns()
        launch = getattr(self._current, "launch", None)
        if launch is None or (self.scopes is not None and scope_id not in self.scopes):
            return
        from triton.runtime.interpreter import interpreter_builder
        launch.grid = tuple(interpreter_builder.grid_dim)
        launch.pids.append(tuple(interpreter_builder.grid_idx))
        launch.times.append(now)
        launch.tags.append(make_tag(scope_id, is_end))

    def records(self) -> list[LaunchRecords]:
        for launch in self._launches:
            if not launch.times:
                self.problems.setdefault(("no_markers", launch.kernel), no_markers_message(launch.kernel, self.scopes))
        return [self._to_records(launch) for launch in self._launches if launch.times]

    @staticmethod
    def _to_records(launch: _Launch) -> LaunchRecords:
        pids = np.array(launch.pids, dtype=np.int64).reshape(-1, 3)
        times = np.array(launch.times, dtype=np.int64)
        tags = np.array(launch.tags, dtype=np.uint32)
        # Program instances run one after another, but group by instance to be sure.
        key = (pids[:, 2] * launch.grid[1] + pids[:, 1]) * launch.grid[0] + pids[:, 0]
        order = np.argsort(key, kind="stable")
        key, times, tags, pids = key[order], times[order], tags[order], pids[order]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else np.zeros(0, int)
        last = np.append(first[1:], len(key)) - 1
        warps = np.zeros(len(first), WARP_DTYPE)
        warps["block_x"], warps["block_y"], warps["block_z"] = pids[first, 0], pids[first, 1], pids[first, 2]
        warps["gt_entry"] = warps["ck_entry"] = times[first]
        warps["gt_exit"] = warps["ck_exit"] = times[last]
        warps["n_events"] = last - first + 1
        return LaunchRecords(kernel=launch.kernel, grid=launch.grid, block=(1, 1, 1), capacity=0,
                             warps=warps, cycles=times, tags=tags,
                             info={"device": "Triton interpreter (CPU)"})
