"""What tracing cost: the figures trace.overhead states, checked against a direct computation."""
import itertools
import statistics

import numpy as np
import pytest

from gwatch_nb import overhead


def test_slowdown_and_spread_are_those_of_the_times():
    rng = np.random.default_rng(3)
    groups = {"a": (list(1.10 + 0.01 * rng.standard_normal(5)), list(1.00 + 0.01 * rng.standard_normal(40))),
              "b": (list(2.3 + 0.02 * rng.standard_normal(3)), list(2.0 + 0.02 * rng.standard_normal(9)))}
    got = overhead.measure(groups, "beside", "unused")
    ratios = [t / statistics.median(u) for traced, u in groups.values() for t in traced]
    pairs = [t / v for traced, u in groups.values() for t, v in itertools.product(traced, u)]
    assert got["measured"] and got["method"] == overhead.METHODS["beside"]
    assert got["slowdown_pct"] == pytest.approx(100 * (statistics.median(ratios) - 1), abs=0.01)
    quartiles = statistics.quantiles(pairs, n=4, method="inclusive")
    assert got["spread_pct"] == pytest.approx([100 * (quartiles[0] - 1), 100 * (quartiles[2] - 1)], abs=0.01)
    assert (got["traced_launches"], got["untraced_launches"]) == (8, 49)
    assert got["spread_pct"][0] <= got["slowdown_pct"] <= got["spread_pct"][1]
    assert 9 < got["slowdown_pct"] < 16  # the two kernels were made 10% and 15% slower


def test_nothing_untraced_is_never_a_figure():
    got = overhead.measure({"a": ([1.2, 1.3], []), "b": ([], [1.0])}, "replay", "no traced launch could be replayed")
    assert got == {"measured": False, "reason": "no traced launch could be replayed"}
    assert overhead.summary(got) == "tracing cost: not measured (no traced launch could be replayed)"
    assert "not measured" in overhead.summary(None)


def test_the_summary_line_states_figure_spread_counts_and_method():
    got = overhead.measure({"k": ([1.1, 1.1], [1.0, 1.0, 1.0])}, "replay", "unused")
    line = overhead.summary(got)
    assert line.startswith("tracing cost: +10.0% kernel time (IQR +10.0% to +10.0%; 2 traced vs 3 untraced")
    assert overhead.METHODS["replay"] in line
