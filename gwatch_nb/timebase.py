"""One nanosecond axis per launch, from every warp's (%globaltimer, %clock64) anchors.

What the hardware gives: %clock64 counts one SM's cycles from a start of its own, so raw
counts are not comparable across SMs; %globaltimer is common to the chip but steps
coarsely (32 ns on the H200); every warp reads both at entry and at exit.

What the H200 showed: the clock's speed changes during a launch (a launch right after
idle averaged 1.5 GHz while the clock ramped to 1.98 GHz, so one straight line per launch
missed by 4 µs), and SMs of different GPCs count at slightly different rates (0.35%
apart over the same 97 µs, far beyond the timer's steps). So the model is: one common
curve C(t) for how the chip's clock advanced, and per SM an affine view of it,
cycles_s(t) = a_s * C(t) + o_s. It is fitted by alternating two least-squares steps over
all anchors of the launch: with C known, each SM's (a_s, o_s) is a line fit of its
anchors; with the SMs known, their anchors, mapped back onto C, give C as a piecewise-
linear curve through binned means (dense anchors average the timer's steps away). An
event maps through its SM's line and the common curve, so warps on one SM share one
mapping, and each SM follows both its own rate and the chip's changes of speed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Shortest anchor span whose own clock rate is trusted (125 globaltimer steps, < 1% error).
MIN_RATE_SPAN_NS = 4000
_FIT_ROUNDS = 12


@dataclass
class ClockModel:
    gt_base: int              # absolute globaltimer ns that relative times count from
    warp_sm: np.ndarray       # per warp: index into the per-SM arrays
    sm_base: np.ndarray       # per SM: integer cycle subtracted first (keeps floats small)
    sm_scale: np.ndarray      # per SM: a_s
    sm_offset: np.ndarray     # per SM: o_s
    knot_cycle: np.ndarray    # the common curve C: strictly increasing values ...
    knot_ns: np.ndarray       # ... at these ns (relative to gt_base)
    ns_per_cycle: float       # typical rate (display, and the slope of a one-knot curve)
    clock_spread_pct: float   # p95 - p5 of long warps' own rates, relative to the typical one

    @property
    def clock_ghz(self) -> float:
        return 1.0 / self.ns_per_cycle

    def to_ns(self, cycles: np.ndarray, warp_row: np.ndarray) -> np.ndarray:
        """ns relative to gt_base (float64) of cycle counts read by the given warps."""
        return self.to_ns_many([cycles], warp_row)[0]

    def to_ns_many(self, cycles: list[np.ndarray], warp_row: np.ndarray) -> list[np.ndarray]:
        """``to_ns`` of several arrays read by the same warps: each SM's terms are gathered
        once for all, and each array is worked on in place (a temporary of a million events
        costs fresh pages; the numbers are those of the plain expression)."""
        sm = self.warp_sm[warp_row]
        base, offset, scale = self.sm_base[sm], self.sm_offset[sm], self.sm_scale[sm]
        out = []
        for c in cycles:
            relative = (np.asarray(c, np.int64) - base).astype(np.float64)
            relative -= offset
            relative /= scale
            out.append(_along(relative, self.knot_cycle, self.knot_ns, self.ns_per_cycle))
        return out


def _along(x: np.ndarray, xs: np.ndarray, ys: np.ndarray, slope: float) -> np.ndarray:
    """Piecewise-linear through (xs, ys), extended beyond each end with the slope of its
    last segment (the clock may be changing there), or `slope` with a single knot."""
    y = np.interp(x, xs, ys)
    first = last = slope
    if len(xs) > 1:
        first = (ys[1] - ys[0]) / (xs[1] - xs[0])
        last = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    below, above = x < xs[0], x > xs[-1]
    y[below] = ys[0] + (x[below] - xs[0]) * first
    y[above] = ys[-1] + (x[above] - xs[-1]) * last
    return y


def _curve(t: np.ndarray, v: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """Knots (cycles, ns) of the common curve: anchors averaged per time bin, then made
    strictly increasing in cycles so it can be read from cycles to ns."""
    bins = np.floor((t - t.min()) / width).astype(np.int64)
    count = np.bincount(bins)
    used = count > 0
    t_k = np.bincount(bins, t)[used] / count[used]
    v_k = np.bincount(bins, v)[used] / count[used]
    keep = np.concatenate(([True], v_k[1:] > np.maximum.accumulate(v_k)[:-1]))
    return v_k[keep], t_k[keep]


def _line_per_group(x: np.ndarray, y: np.ndarray, group: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares y = a*x + o per group; a = 1 where x does not vary within a group."""
    count = np.bincount(group, minlength=groups).astype(np.float64)
    mean_x = np.bincount(group, x, groups) / count
    mean_y = np.bincount(group, y, groups) / count
    dx, dy = x - mean_x[group], y - mean_y[group]
    sxx = np.bincount(group, dx * dx, groups)
    sxy = np.bincount(group, dx * dy, groups)
    spread_enough = sxx > 1e-6 * np.maximum(1.0, mean_x ** 2)
    scale = np.where(spread_enough, sxy / np.where(spread_enough, sxx, 1.0), 1.0)
    return scale, mean_y - scale * mean_x


def _typical_rate(span_ns, span_cycles, exited, fallback) -> tuple[float, float]:
    long_enough = exited & (span_ns >= MIN_RATE_SPAN_NS)
    if long_enough.any():
        measured = span_ns[long_enough] / span_cycles[long_enough]
        typical = float(np.median(measured))
        p5, p95 = np.percentile(measured, [5, 95])
        return typical, float((p95 - p5) / typical * 100)
    if exited.any():  # only short warps: pool them, which averages the timer's steps away
        return float(span_ns[exited].sum() / span_cycles[exited].sum()), 0.0
    return fallback, 0.0


def fit_clock(warps: np.ndarray, cycles_are_ns: bool = False, fallback_ns_per_cycle: float = 1.0) -> ClockModel:
    """The clock model of one launch (see the module doc).

    ``cycles_are_ns``: the interpreter tier, whose clock already is host nanoseconds.
    ``fallback_ns_per_cycle``: the rate when no warp spans any time at all."""
    one = np.ones(1)
    if len(warps) == 0:
        return ClockModel(0, np.zeros(0, np.int64), np.zeros(1, np.int64), one, np.zeros(1), np.zeros(1),
                          np.zeros(1), fallback_ns_per_cycle, 0.0)
    gt_base = int(warps["gt_entry"].min())
    if cycles_are_ns:
        return ClockModel(gt_base, np.zeros(len(warps), np.int64), np.array([gt_base], np.int64), one,
                          np.zeros(1), np.zeros(1), np.zeros(1), 1.0, 0.0)

    sm_ids, warp_sm = np.unique(warps["sm"], return_inverse=True)
    groups = len(sm_ids)
    exited = (warps["gt_exit"] != 0) & (warps["ck_exit"] > warps["ck_entry"])
    owner = np.concatenate([warp_sm, warp_sm[exited]])
    ck_abs = np.concatenate([warps["ck_entry"], warps["ck_exit"][exited]]).astype(np.int64)
    gt_abs = np.concatenate([warps["gt_entry"], warps["gt_exit"][exited]]).astype(np.int64)
    sm_base = np.full(groups, np.iinfo(np.int64).max)
    np.minimum.at(sm_base, owner, ck_abs)
    ck = (ck_abs - sm_base[owner]).astype(np.float64)  # small numbers: no precision lost
    t = (gt_abs - gt_base).astype(np.float64)

    span_ns = (warps["gt_exit"].astype(np.int64) - warps["gt_entry"].astype(np.int64)).astype(np.float64)
    span_cycles = (warps["ck_exit"].astype(np.int64) - warps["ck_entry"].astype(np.int64)).astype(np.float64)
    rate, spread = _typical_rate(span_ns, span_cycles, exited, fallback_ns_per_cycle)

    width = max(1000.0, (t.max() - t.min()) / 400)
    on_curve = t / rate  # start from a straight clock
    for _ in range(_FIT_ROUNDS):
        scale, offset = _line_per_group(on_curve, ck, owner, groups)
        scale /= np.median(scale)  # C's own scale is free: keep the typical SM at 1
        offset = np.bincount(owner, ck - scale[owner] * on_curve, groups) / np.bincount(owner, minlength=groups)
        knot_cycle, knot_ns = _curve(t, (ck - offset[owner]) / scale[owner], width)
        on_curve = _along(t, knot_ns, knot_cycle, 1.0 / rate)
    return ClockModel(gt_base, warp_sm, sm_base, scale, offset, knot_cycle, knot_ns, rate, spread)
