"""PC sampling of the launches a session chooses, through one pc_sampling.Sampler per CUDA
context, enabled from ``prepare`` (before the session loads the code it samples: CUPTI
charges PCs only to modules it saw load) to ``close`` (the session's end); where CUPTI
refuses, why, and nothing more is sampled.

The trace session (session.py) and the untraced stall session (stall_session.py) call
``begin`` in a launch's enter callback and ``end`` in its exit callback, so a sampled range
holds that launch alone."""
from __future__ import annotations

from ..errors import CuptiUnavailableError
from ..stall_reasons import StallCounts
from . import pc_sampling


class LaunchSampling:
    def __init__(self, period: int | None):
        self.period = period
        self.refused = ""  # why CUPTI would not sample, once it would not
        self.counts: StallCounts | None = None  # made with the first sampler, which knows the period in force
        self._samplers: dict[int, pc_sampling.Sampler] = {}
        self._reasons: dict[int, dict[int, str]] = {}  # per context, its sampler's reason names (kept past close)

    def prepare(self, context: int) -> bool:
        """Sampling enabled on `context` (once per session); False when CUPTI refuses."""
        if self.refused:
            return False
        if context in self._samplers:
            return True
        try:
            sampler = pc_sampling.Sampler(context)
            try:
                sampler.use_period(self.period)
            except CuptiUnavailableError:
                sampler.close()
                raise
        except CuptiUnavailableError as error:
            self.refused = f"PC sampling is not available here ({error})"
            return False
        self._samplers[context] = sampler
        self._reasons[context] = sampler.reasons
        if self.counts is None:
            chosen = "asked for" if self.period is not None else "CUPTI's default for this GPU"
            self.counts = StallCounts(sampler.period, chosen)
        return True

    def begin(self, context: int) -> bool:
        """Start sampling just before a launch in `context`; False when sampling is refused."""
        if not self.prepare(context):
            return False
        try:
            self._samplers[context].bracket_start()
            return True
        except CuptiUnavailableError as error:
            self.refused = f"PC sampling failed ({error})"
            return False

    def end(self, context: int) -> pc_sampling.Range | None:
        """The samples of the launch `begin` bracketed (None where CUPTI failed to give them)."""
        try:
            return self._samplers[context].bracket_stop()
        except CuptiUnavailableError as error:
            self.refused = f"PC sampling failed ({error})"
            return None

    def add(self, kernel: str, context: int, sampled: pc_sampling.Range, owner) -> None:
        self.counts.add(kernel, sampled, self._reasons[context], owner)

    def close(self) -> None:
        """Sampling off on every context (the session's end)."""
        for sampler in self._samplers.values():
            sampler.close()
        self._samplers.clear()

    def meta(self) -> dict | None:
        return self.counts.meta() if self.counts else None
