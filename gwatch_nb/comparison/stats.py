"""The change between two runs of a measure, with a confidence interval and a verdict.

Every measure compared is a ratio of sums over *units*: scope instance durations summed
per warp over instance counts per warp (the mean duration), idle ns over lifetime ns per
warp (the idle share), busy ns per SM, duration per launch. The change is
``mean_b / mean_a - 1`` and its interval a percentile bootstrap that resamples whole
units of each run independently.

Why a unit bootstrap and not a rank test over instances: instances of one warp are not
independent (same SM, same pipeline state, consecutive iterations), so a test treating
262 k instances as 262 k draws finds "significant" changes in noise; a warp is the
smallest unit that runs on its own. The bootstrap needs no distribution, gives an
interval on the scale users read (percent), and over per-unit sums costs O(resamples ×
units). It is seeded from the measure's name and a digest of the two runs' data
(tables.py), never from their labels, so the same traces give the same interval on
every run, under any names and beside any other runs."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

RESAMPLES = 1000
LEVEL = 0.95
SEED = 0
#: Fewer units than this in either run: no interval (a bootstrap of 2 launches means nothing).
MIN_UNITS = 5
#: Resamples drawn at once, bounding memory to CHUNK × units indices.
_CHUNK = 128


@dataclass(frozen=True)
class Change:
    """Run b against run a: relative change of the mean, its interval, how many units."""
    a: float
    b: float
    change: float
    low: float
    high: float
    units_a: int
    units_b: int

    @property
    def has_interval(self) -> bool:
        return not (np.isnan(self.low) or np.isnan(self.high))

    @property
    def excludes_zero(self) -> bool:
        return self.has_interval and (self.low > 0 or self.high < 0)


def ratio_mean(sums: np.ndarray, counts: np.ndarray) -> float:
    total = float(np.sum(counts))
    return float(np.sum(sums)) / total if total else float("nan")


def _resampled_means(sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Resamples × groups: each resample draws the units with replacement (as weights, so
    every group of a table is resampled with the same draw in one matrix product)."""
    n = len(sums)
    out = np.empty((resamples, sums.shape[1]))
    for first in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - first)
        picks = rng.integers(0, n, (size, n)) + np.arange(size)[:, None] * n
        weights = np.bincount(picks.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)
        total = weights @ counts
        out[first:first + size] = np.divide(weights @ sums, total, out=np.full(total.shape, np.nan),
                                            where=total != 0)
    return out


def compare_groups(key: str, a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
                   resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED) -> list[Change]:
    """Compare run b with run a for every group (column) of a table at once.

    ``a`` and ``b`` are (sums, counts) matrices of units × groups: a unit (a warp) without
    instances of a group has 0 and 0 there. ``key`` names the table and the runs' data
    and seeds its random stream: a group's interval depends on its own data and the key,
    never on which other groups are compared beside it."""
    sums_a, counts_a = (np.asarray(x, np.float64).reshape(len(x), -1) for x in a)
    sums_b, counts_b = (np.asarray(x, np.float64).reshape(len(x), -1) for x in b)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_a, mean_b = sums_a.sum(0) / counts_a.sum(0), sums_b.sum(0) / counts_b.sum(0)
        change = mean_b / mean_a - 1
    groups = sums_a.shape[1]
    low, high = np.full(groups, np.nan), np.full(groups, np.nan)
    if min(len(sums_a), len(sums_b)) >= MIN_UNITS:
        rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
        boot_a = _resampled_means(sums_a, counts_a, rng, resamples)
        boot_b = _resampled_means(sums_b, counts_b, rng, resamples)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = boot_b / boot_a - 1
        ratios[~np.isfinite(ratios)] = np.nan
        tail = (1 - level) / 2 * 100
        usable = np.isfinite(mean_a) & (mean_a != 0) & ~np.all(np.isnan(ratios), axis=0)
        if usable.any():
            low[usable], high[usable] = np.nanpercentile(ratios[:, usable], [tail, 100 - tail], axis=0)
    return [Change(float(mean_a[g]), float(mean_b[g]), float(change[g]), float(low[g]), float(high[g]),
                   len(sums_a), len(sums_b)) for g in range(groups)]


def compare_units(key: str, a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
                  resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED) -> Change:
    """Compare the ratio-of-sums mean of run b's units with run a's (one group)."""
    return compare_groups(key, a, b, resamples, level, seed)[0]


#: How a measure's rise and fall read in words.
WORDS = {"time": ("longer", "shorter"), "share": ("higher", "lower")}


def verdict(subject: str, change: Change, label_a: str, label_b: str, kind: str = "time",
            level: float = LEVEL) -> str | None:
    """A sentence for a change whose interval excludes zero; None otherwise."""
    if not change.excludes_zero:
        return None
    up, down = WORDS[kind]
    word = up if change.change > 0 else down
    return (f"{subject}: {abs(change.change):.1%} {word} in {label_b} than in {label_a} "
            f"({level:.0%} CI {change.low:+.1%} to {change.high:+.1%})")
