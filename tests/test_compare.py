"""compare(): real H200 traces compared, statistics checked against an independent computation,
intervals that must exclude zero do, a trace against itself shows no change, and runs of
different shape compare what they share and say what they do not."""
import os
import statistics

import numpy as np
import pandas as pd
import pytest

import gwatch_nb
from conftest import FIXTURES
from gwatch_nb import compare
from gwatch_nb.comparison import match_scopes
from gwatch_nb.comparison.stats import compare_groups, compare_units
from support.traces import synthetic_trace

WARP = ["launch", "block_x", "block_y", "block_z", "warp"]


@pytest.fixture(scope="module")
def attention():
    return (gwatch_nb.load(os.path.join(FIXTURES, "attention_h200.json")),
            gwatch_nb.load(os.path.join(FIXTURES, "attention_4k_h200.json")))


@pytest.fixture(scope="module")
def attention_cmp(attention):
    return compare(*attention, labels=("N=1024", "N=4096"))


def test_a_trace_against_itself_shows_no_change(attention):
    cmp = compare(attention[0], attention[0], labels=("a", "a again"))
    assert cmp.verdicts == []
    for table in (cmp.df, cmp.roles, cmp.iterations, cmp.kernel):
        changed = table[table["run"] == "a again"]
        assert (changed["change"] == 0).all()
        with_interval = changed.dropna(subset=["ci_low"])
        assert len(with_interval) and ((with_interval["ci_low"] <= 0) & (with_interval["ci_high"] >= 0)).all()
        assert changed["verdict"].isna().all()


def test_statistics_match_an_independent_computation(attention, attention_cmp):
    for trace, label in zip(attention, ("N=1024", "N=4096")):
        df = trace.df
        lifetime = sum(int(e - s) for s, e in zip(trace.warps["start_ns"], trace.warps["end_ns"]))
        for scope in ("load_kv", "dot_qk", "softmax", "dot_pv"):
            values = sorted(int(v) for v in df.loc[df["scope"] == scope, "duration_ns"])
            row = attention_cmp.df.set_index(["scope", "run"]).loc[(scope, label)]
            assert row["count"] == len(values)
            assert row["p50_ns"] == statistics.median(values)
            # p95 by linear interpolation between order statistics, written out.
            position = 0.95 * (len(values) - 1)
            low = int(position)
            p95 = values[low] + (values[min(low + 1, len(values) - 1)] - values[low]) * (position - low)
            assert row["p95_ns"] == pytest.approx(p95)
            assert row["mean_ns"] == pytest.approx(sum(values) / len(values))
            assert row["total_ns"] == sum(values)
            assert row["share"] == pytest.approx(sum(values) / lifetime)


def test_intervals_agree_with_the_delta_method(attention, attention_cmp):
    """The bootstrap interval of the ratio of per-warp means, against a normal approximation
    computed by hand from the same warps (the two agree for samples this large)."""
    def mean_and_variance(trace, scope):
        df = trace.df[trace.df["scope"] == scope]
        per_warp = df.groupby(WARP, observed=True)["duration_ns"].agg(["sum", "count"])
        s, c = per_warp["sum"].to_numpy(float), per_warp["count"].to_numpy(float)
        mean = s.sum() / c.sum()
        # Variance of a ratio estimator over clusters: residuals s - mean * c.
        variance = ((s - mean * c) ** 2).sum() / (len(s) - 1) * len(s) / c.sum() ** 2
        return mean, variance

    for scope in ("load_kv", "dot_qk", "softmax", "dot_pv"):
        (ma, va), (mb, vb) = (mean_and_variance(t, scope) for t in attention)
        ratio = mb / ma
        se = ratio * np.sqrt(va / ma ** 2 + vb / mb ** 2)
        row = attention_cmp.df.set_index(["scope", "run"]).loc[(scope, "N=4096")]
        assert row["change"] == pytest.approx(ratio - 1)
        half = (row["ci_high"] - row["ci_low"]) / 2
        assert half == pytest.approx(1.96 * se, rel=0.2)
        assert row["ci_low"] < ratio - 1 < row["ci_high"]


def test_longer_sequences_make_every_scope_slower_and_say_so(attention_cmp):
    changed = attention_cmp.df[attention_cmp.df["run"] == "N=4096"]
    assert (changed["ci_low"] > 0).all()
    softmax = changed.set_index("scope").loc["softmax"]
    assert softmax["verdict"].startswith("softmax: ") and "longer in N=4096 than in N=1024" in softmax["verdict"]
    assert f"{softmax['change']:.1%}" in softmax["verdict"]
    assert softmax["verdict"] in attention_cmp.verdicts
    assert any("grids differ" in n and "(8, 4, 1)" in n and "(32, 8, 1)" in n for n in attention_cmp.notes)
    # N=1024 runs 16 key blocks per warp, N=4096 64: only iterations 0-15 are shared.
    assert sorted(attention_cmp.iterations["seq"].unique()) == list(range(16))
    assert any("seq 16-63 not in every run" in n for n in attention_cmp.notes)
    assert sorted(attention_cmp.roles["role"].unique()) == [0, 1, 2, 3]


def test_one_launch_per_run_gives_no_interval_for_kernel_duration(attention_cmp):
    kernel = attention_cmp.kernel.set_index(["measure", "run"])
    duration = kernel.loc[("duration_ns", "N=4096")]
    assert np.isnan(duration["ci_low"]) and pd.isna(duration["verdict"])
    assert kernel.loc[("duration_ns", "N=1024"), "value"] == 17435
    assert kernel.loc[("duration_ns", "N=4096"), "change"] == pytest.approx(96899 / 17435 - 1)
    assert any("fewer than 5 launches" in n for n in attention_cmp.notes)
    idle = kernel.loc[("idle_share", "N=4096")]
    assert idle["samples"] == 1024 and idle["samples_of"] == "warps" and not np.isnan(idle["ci_low"])


def test_intervals_are_deterministic_and_independent_of_what_else_is_compared(attention):
    a, b = attention
    first = compare(a, b).df
    again = compare(a, b).df
    assert first[["ci_low", "ci_high"]].equals(again[["ci_low", "ci_high"]])
    other_seed = compare(a, b, seed=1).df
    assert not first["ci_low"].equals(other_seed["ci_low"])
    # A group's interval is the same whether or not other groups are bootstrapped beside it.
    rng = np.random.default_rng(5)
    sums, counts = rng.integers(50, 150, (40, 3)).astype(float), rng.integers(1, 4, (40, 3)).astype(float)
    together = compare_groups("k", (sums, counts), (sums * 1.5, counts))
    alone = compare_groups("k", (sums[:, :1], counts[:, :1]), (sums[:, :1] * 1.5, counts[:, :1]))
    assert together[0] == alone[0] and together[0].change == pytest.approx(0.5) and together[0].excludes_zero
    assert compare_units("k", (sums[:, 0], counts[:, 0]), (sums[:, 0] * 1.5, counts[:, 0])) == alone[0]


def test_the_same_traces_give_the_same_intervals_whatever_the_runs_are_called(attention):
    a, b = attention
    unnamed, named = compare(a, b), compare(a, b, labels=("A", "B"))
    for table in ("df", "kernel", "roles", "iterations"):
        first, second = getattr(unnamed, table), getattr(named, table)
        assert first[["ci_low", "ci_high"]].equals(second[["ci_low", "ci_high"]]), table
        assert first["ci_low"].notna().any(), table
    # A third run beside them moves neither the draws nor the intervals of the first two.
    causal = gwatch_nb.load(os.path.join(FIXTURES, "attention_causal_h200.json"))
    three = compare(a, b, causal, labels=("A", "B", "C"))
    shared = set(three.df["scope"])
    mine = named.df[named.df["scope"].isin(shared) & (named.df["run"] == "B")].reset_index(drop=True)
    theirs = three.df[three.df["run"] == "B"].reset_index(drop=True)
    assert len(mine) and mine[["scope", "ci_low", "ci_high"]].equals(theirs[["scope", "ci_low", "ci_high"]])


def test_three_runs_compare_each_with_the_first(attention):
    matmul = gwatch_nb.load(os.path.join(FIXTURES, "attention_causal_h200.json"))
    cmp = compare([attention[0], attention[1], matmul], labels=["small", "large", "causal"])
    assert list(cmp.df["run"].unique()) == ["small", "large", "causal"]
    assert cmp.df[cmp.df["run"] == "small"]["change"].isna().all()
    assert cmp.df[cmp.df["run"] != "small"]["change"].notna().all()
    assert any("blocks (threads) differ" in n for n in cmp.notes)  # 128 vs 256 threads


SPANS = {1: "load", 2: "dot", 3: "store"}


def _warps(durations, scope_ids, warps=8):
    """Warps each running the scopes back to back, one instance per scope."""
    rows = []
    for w in range(warps):
        t, events = 0, []
        for sid in scope_ids:
            d = durations[sid] + w % 3
            events += [(t, sid, False), (t + d, sid, True)]
            t += d
        rows.append(((w // 4, 0, 0), w % 4, w // 4, 0, t + 10, events))
    return rows


def test_scopes_match_by_name_or_id_and_the_rest_is_listed():
    base = synthetic_trace(_warps({1: 100, 2: 200}, [1, 2]), SPANS)
    renamed = synthetic_trace(_warps({5: 100, 2: 400, 3: 50}, [5, 2, 3]), {5: "load", 2: "dot", 3: "store"})
    cmp = compare(base, renamed, labels=("before", "after"))
    assert list(cmp.df["scope"].unique()) == ["load", "dot"]
    after = cmp.df[cmp.df["run"] == "after"].set_index("scope")
    assert after.loc["load", "scope_id"] == 5 and after.loc["load", "change"] == 0
    assert after.loc["dot", "change"] == pytest.approx((400 + 1) / (200 + 1) - 1, rel=0.01)
    assert "dot: " in after.loc["dot", "verdict"] and "longer in after" in after.loc["dot", "verdict"]
    assert any("'load' has id 1 in one run and 5" in n for n in cmp.notes)
    assert any("only in after, not in before: store" in n for n in cmp.notes)
    matched, notes = match_scopes({7: "7"}, {7: "softmax"})
    assert matched == {7: 7} and "matched by id" in notes[0]


def test_the_package_name_stays_the_function():
    import gwatch_nb.comparison  # noqa: F401  (a submodule import must not shadow the function)
    assert gwatch_nb.compare is compare and callable(gwatch_nb.compare)


def test_bad_arguments_get_one_line_errors(attention):
    a, _ = attention
    with pytest.raises(ValueError, match="at least two traces"):
        compare(a)
    with pytest.raises(TypeError, match="argument 1 is a str"):
        compare(a, "b.json")
    with pytest.raises(ValueError, match="2 labels for 3 traces"):
        compare(a, a, a, labels=("x", "y"))
    with pytest.raises(ValueError, match="labels must differ"):
        compare(a, a, labels=("x", "x"))


def test_text_and_dict_hold_the_same_tables(attention_cmp):
    summary = attention_cmp.to_dict(scopes=["softmax"])
    assert {r["scope"] for r in summary["scopes"]} == {"softmax"}
    assert summary["scopes"][0]["change"] is None  # NaN becomes null in JSON
    text = repr(attention_cmp)
    assert "N=1024 vs N=4096" in text and "softmax" in text
    for verdict in attention_cmp.verdicts:
        assert verdict in text
