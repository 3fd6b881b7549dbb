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
units). It is seeded from the measure's name, so the same inputs give the same interval
on every run and in every order."""
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
    n = len(sums)
    out = np.empty(resamples)
    for first in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - first)
        picks = rng.integers(0, n, (size, n))
        total = counts[picks].sum(axis=1)
        out[first:first + size] = np.divide(sums[picks].sum(axis=1), total, out=np.full(size, np.nan),
                                            where=total != 0)
    return out


def compare_units(key: str, a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
                  resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED) -> Change:
    """Compare the ratio-of-sums mean of run b's units with run a's.

    ``a`` and ``b`` are (sums, counts) per unit; ``key`` names the measure and seeds its
    random stream, so the interval does not depend on what else is compared."""
    sums_a, counts_a = (np.asarray(x, np.float64) for x in a)
    sums_b, counts_b = (np.asarray(x, np.float64) for x in b)
    mean_a, mean_b = ratio_mean(sums_a, counts_a), ratio_mean(sums_b, counts_b)
    change = mean_b / mean_a - 1 if mean_a else float("nan")
    low = high = float("nan")
    if min(len(sums_a), len(sums_b)) >= MIN_UNITS and mean_a:
        rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
        boot_a = _resampled_means(sums_a, counts_a, rng, resamples)
        boot_b = _resampled_means(sums_b, counts_b, rng, resamples)
        ratios = boot_b / boot_a - 1
        ratios = ratios[np.isfinite(ratios)]
        if len(ratios):
            tail = (1 - level) / 2 * 100
            low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    return Change(mean_a, mean_b, change, low, high, len(sums_a), len(sums_b))


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
