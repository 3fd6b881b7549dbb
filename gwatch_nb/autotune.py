"""Autotuned kernels during a trace: which launches benchmark a config, which is the user's.

While ``triton.autotune`` benchmarks, it launches every config it tries many times;
only the launch the user's call then makes, with the chosen config, is the kernel's
real run. A session asks ``role()`` at each matching launch and ``keep(role)``
whether to trace it: by default benchmark launches run untraced (counted, and said so
in ``Trace.meta["autotune"]``); in a sweep (``configs=True``) the first benchmark
launch of each config is traced instead, the autotuner having been made to benchmark
again. Triton's side of this is in triton_compat."""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

from . import launch_config, triton_compat


@dataclass(frozen=True)
class LaunchRole:
    """A launch of an autotuned kernel: ``"benchmark"`` of a config, or ``"chosen"``
    (the user's call, with the autotuner's choice); ``config`` as launch_config has it."""
    role: str
    kernel: str
    config: dict


class _Current(threading.local):
    benchmarking: tuple | None = None  # (tuner, config) being benchmarked in this thread
    running: object = None             # the autotuner whose call runs in this thread


class AutotuneWatch:
    """Follows every autotuned kernel of the process from start() to stop()."""

    def __init__(self, sweep: bool):
        self.sweep = sweep
        self._current = _Current()
        self._tuners: list = []
        self._restores: list = []
        self._swept: set[tuple[str, str]] = set()  # (kernel, config label) traced in the sweep
        self._kernels: dict[str, dict] = {}        # what meta() reports, by kernel

    def start(self) -> None:
        for tuner in triton_compat.autotuners():
            if self.sweep:
                self._restores.append(triton_compat.retune(tuner))
            triton_compat.watch_autotuner(tuner, self._benchmarking, self._running)
            self._tuners.append(tuner)

    def stop(self) -> None:
        for tuner in self._tuners:
            triton_compat.unwatch_autotuner(tuner)
            entry = self._kernels.get(triton_compat.autotuner_name(tuner))
            best = triton_compat.best_config(tuner)
            if entry is not None and best is not None:
                entry["chosen"] = launch_config.label(triton_compat.autotune_config(best))
        for restore in self._restores:
            restore()
        self._tuners.clear()
        self._restores.clear()

    def _entry(self, tuner) -> dict:
        return self._kernels.setdefault(triton_compat.autotuner_name(tuner), {
            "configs_tried": [], "chosen": None, "benchmark_launches": 0,
            "traced": "one launch of each config tried" if self.sweep else "the launches made with the chosen config"})

    @contextlib.contextmanager
    def _benchmarking(self, tuner, config):
        previous = self._current.benchmarking
        self._current.benchmarking = (tuner, triton_compat.autotune_config(config))
        self._entry(tuner)["configs_tried"].append(launch_config.label(self._current.benchmarking[1]))
        try:
            yield
        finally:
            self._current.benchmarking = previous

    @contextlib.contextmanager
    def _running(self, tuner):
        previous = self._current.running
        self._current.running = tuner
        try:
            yield
        finally:
            self._current.running = previous

    def role(self, kernel: str) -> LaunchRole | None:
        """What this thread's launch of ``kernel`` is to an autotuned kernel (None: no
        autotuner of that name is making it; a hook of the autotuner may launch others)."""
        if self._current.benchmarking is not None:
            tuner, config = self._current.benchmarking
            if triton_compat.autotuner_name(tuner) == kernel:
                return LaunchRole("benchmark", kernel, config)
        tuner = self._current.running
        if (tuner is not None and triton_compat.autotuner_name(tuner) == kernel
                and triton_compat.best_config(tuner) is not None):
            self._entry(tuner)
            return LaunchRole("chosen", triton_compat.autotuner_name(tuner),
                              triton_compat.autotune_config(triton_compat.best_config(tuner)))
        return None

    def keep(self, role: LaunchRole | None) -> bool:
        """Whether a matching launch in this role is traced (launch limits aside)."""
        if not self.sweep:
            if role is not None and role.role == "benchmark":
                self._kernels[role.kernel]["benchmark_launches"] += 1
                return False
            return True
        if role is None or role.role != "benchmark":
            return False
        self._kernels[role.kernel]["benchmark_launches"] += 1
        key = (role.kernel, launch_config.label(role.config))
        if key in self._swept:
            return False
        self._swept.add(key)
        return True

    def meta(self) -> dict:
        """``autotune``: per autotuned kernel seen, the configs tried, the chosen one's
        label, how many benchmark launches it made and what the trace holds of it."""
        return {"autotune": {name: dict(entry) for name, entry in self._kernels.items()}} if self._kernels else {}


def summaries(meta: dict) -> list[str]:
    """One line per autotuned kernel, for the views' headers."""
    lines = []
    for name, entry in meta.get("autotune", {}).items():
        tried = len(dict.fromkeys(entry["configs_tried"]))
        bench = (f"{tried} configs benchmarked ({entry['benchmark_launches']} launches)" if tried
                 else "no benchmarking during the trace (its choice was cached)")
        lines.append(f"autotune {name}: {bench}; chosen: {entry['chosen'] or 'unknown'}; traced: {entry['traced']}")
    return lines
