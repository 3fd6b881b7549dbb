"""What a trace is asked to do: one frozen, validated object every tier reads.

``do_trace`` and ``%%gwatch`` build it from their arguments; a bad value is an
``OptionError`` naming the option, the value and why, before anything runs."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from .errors import OptionError
from .stall_reasons import PERIODS

MIN_CAPACITY = 2


def tier_choices() -> tuple[str, ...]:
    """The tiers a trace may ask for: "auto" (decided by ``tiers.resolve`` before a
    session opens) and every tier of ``tiers.TIERS``."""
    from .tiers import TIERS
    return ("auto", *TIERS)


def _tier(name: str):
    """The record of tier ``name`` (tiers.py reads options, so it is imported here, late)."""
    from .tiers import TIERS
    return TIERS[name]


def _max_launches(launches) -> int | None:
    """'all' -> None (no limit), 'first' -> 1, a positive int (or its digits) -> that many."""
    if launches == "all" or launches is None:
        return None
    if launches == "first":
        return 1
    if isinstance(launches, int) and not isinstance(launches, bool) and launches > 0:
        return launches
    if isinstance(launches, str) and launches.isdigit() and int(launches) > 0:
        return int(launches)
    raise OptionError("launches", launches, "must be 'first', 'all' or a positive integer")


def kernel_pattern(text) -> re.Pattern:
    """``kernel_name_pattern`` compiled; OptionError where it is no regular expression."""
    try:
        return re.compile(text)
    except (re.error, TypeError) as error:
        raise OptionError("kernel_name_pattern", text, f"is not a regular expression ({error})") from None


#: Why stall sampling beside a trace needs the sass tier (options and api.start say it).
STALLS_NEED_SASS = ("needs instrumentation_tier='sass' (samples are charged to the instructions of the kernel as "
                    "compiled, which only that tier keeps; gwatch_nb.stalls samples the untraced kernel on any GPU)")


def check_stalls(stalls, period) -> None:
    """OptionError for a bad ``stalls`` or ``stall_period`` (a period without stalls included)."""
    if not isinstance(stalls, bool):
        raise OptionError("stalls", stalls, "must be True or False")
    if period is None:
        return
    if isinstance(period, bool) or not isinstance(period, int) or period not in PERIODS:
        raise OptionError("stall_period", period, f"must be N for 2^N cycles between samples, N from "
                                                  f"{PERIODS.start} to {PERIODS.stop - 1}")
    if not stalls:
        raise OptionError("stall_period", period, "applies only with stalls=True")


@dataclass(frozen=True)
class TraceOptions:
    """``kernel_name_pattern``: regular expression for the kernel names to trace
    (``re.search``). ``tier``: one of ``tier_choices()``. ``capacity``: events per warp (None:
    the tier's default). ``launches``: "all", "first" or N matching launches.
    ``scopes``: the scope ids to record (``scopes.chosen_scopes``), None for all.
    ``configs``: for an autotuned kernel, trace one launch of each config the autotuner
    tries (autotune.py) instead of the user's own launch. ``baseline``: replay the first
    traced launch of each kernel this many times untraced, to time what tracing cost
    (only for kernels whose launches may be repeated: they must not write their inputs).
    ``auto``: on the sass tier (``tier`` "sass"), also trace the automatic sites, every
    loop's iterations and every blocking wait (docs/sass/sites.md), with or without
    markers; any other tier refuses it once "auto" is resolved. ``fallback``: on the sass tier, a
    kernel it cannot instrument soundly (or only with readings left out) is traced on the ptx
    tier instead, with a ``sass_fallback`` warning: what tier "auto" resolves to on an sm_90
    GPU. ``stalls``: on the sass tier, also sample each traced launch's warp stall reasons
    (stall_reasons.py), every ``2^stall_period`` cycles (None: CUPTI's default for the GPU).
    ``on_instrument``: told a kernel's name before it is instrumented (the first time can
    take a second)."""
    kernel_name_pattern: str
    tier: str = "auto"
    capacity: int | None = None
    launches: int | str = "all"
    scopes: frozenset[int] | None = None
    configs: bool = False
    baseline: int = 0
    auto: bool = False
    fallback: bool = False
    stalls: bool = False
    stall_period: int | None = None
    on_instrument: Callable[[str], None] | None = field(default=None, compare=False)
    pattern: re.Pattern = field(init=False, repr=False, compare=False)
    max_launches: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        pattern = kernel_pattern(self.kernel_name_pattern)
        if self.tier not in tier_choices():
            raise OptionError("instrumentation_tier", self.tier,
                              f"is not supported; supported: {', '.join(tier_choices())}")
        capacity = self.capacity
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int)):
            raise OptionError("capacity", capacity, "must be a whole number of events per warp")
        if capacity is not None and capacity < MIN_CAPACITY:
            raise OptionError("capacity", capacity, f"must be at least {MIN_CAPACITY} events per warp")
        if self.scopes is not None and not isinstance(self.scopes, frozenset):
            raise OptionError("scopes", self.scopes, "must be the frozenset of ids scopes.chosen_scopes gives")
        if not isinstance(self.configs, bool):
            raise OptionError("configs", self.configs, "must be True or False")
        if isinstance(self.baseline, bool) or not isinstance(self.baseline, int) or self.baseline < 0:
            raise OptionError("baseline", self.baseline, "must be a whole number of untraced replays (0: none)")
        if not isinstance(self.auto, bool):
            raise OptionError("auto", self.auto, "must be True or False")
        if self.auto and self.tier != "auto" and not _tier(self.tier).has_sites:
            raise OptionError("auto", self.auto, f"needs instrumentation_tier='sass' (automatic sites are read off the "
                                                 f"compiled kernel); this trace asks for {self.tier!r}")
        check_stalls(self.stalls, self.stall_period)
        if self.stalls and self.tier != "auto" and not _tier(self.tier).has_sites:
            raise OptionError("stalls", self.stalls, STALLS_NEED_SASS + f"; this trace asks for {self.tier!r}")
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "max_launches", _max_launches(self.launches))
