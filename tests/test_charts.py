"""Summary charts on real H200 traces: every chart builds, stays small on two million
scope instances, keeps names as data, and colours scopes as the timeline does."""
import numpy as np
import pytest

alt = pytest.importorskip("altair", reason="the charts need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb import analysis, charts, serializers  # noqa: E402
from gwatch_nb.trace import Trace  # noqa: E402

from support.traces import long_loop_trace  # noqa: E402
from tiled_trace import tile  # noqa: E402

XSS = "<img src=x onerror=alert(1)>"


def _rows(spec: dict) -> list[list]:
    """The data rows embedded anywhere in a vega-lite spec."""
    found = [values for values in spec.get("datasets", {}).values()]
    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("data"), dict) and "values" in node["data"]:
                found.append(node["data"]["values"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(spec)
    return found


@pytest.fixture(scope="module")
def matmul():
    return gwatch_nb.load(f"{FIXTURES}/matmul_h200.json")


@pytest.fixture(scope="module")
def two_million():
    trace = tile(gwatch_nb.load(f"{FIXTURES}/attention_4k_h200.json"), 8)
    assert len(trace.df) == 2_097_152
    return trace


@pytest.mark.parametrize("name", ["matmul_h200.json", "attention_causal_h200.json", "matmul_overflow_h200.json"])
def test_every_chart_builds_on_real_traces(name):
    trace = gwatch_nb.load(f"{FIXTURES}/{name}")
    built = charts.all_charts(trace)
    assert [caption for caption, _ in built] == ["Duration distribution per scope", "Per-SM activity over time",
                                                 "Duration per iteration", "Busy vs idle share per warp"]
    for _, chart in built:
        spec = chart.to_dict()
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
        assert sum(len(rows) for rows in _rows(spec)) > 0


def test_histograms_count_every_instance(matmul):
    spec = charts.duration_distribution(matmul).to_dict()
    (rows,) = _rows(spec)
    per_scope = {}
    for row in rows:
        per_scope[row["scope"]] = per_scope.get(row["scope"], 0) + row["count"]
    assert per_scope == matmul.df["scope"].astype(str).value_counts().to_dict()


def test_two_million_instances_chart_from_aggregates(two_million):
    for _, chart in charts.all_charts(two_million):
        spec = chart.to_dict()  # altair's own 5,000-row limit applies here too
        rows = sum(len(r) for r in _rows(spec))
        assert 0 < rows <= charts.MAX_CHART_ROWS
        assert len(str(spec)) < 400_000
    full = charts.dashboard(two_million).to_dict()
    assert len(str(full)) < 1_000_000


def test_sm_activity_carries_each_sm_once(matmul):
    (rows,) = _rows(charts.sm_activity_over_time(matmul).to_dict())
    assert sorted(r["sm"] for r in rows) == sorted(matmul.df["sm"].unique().tolist())
    assert all(len(r["warps"]) == charts.SM_TIME_BINS for r in rows)
    # At most the warps an SM ran can be inside a scope at once.
    per_sm = matmul.warps.groupby("sm").size()
    assert all(max(r["warps"]) <= per_sm[r["sm"]] + 1e-9 for r in rows)
    with pytest.raises(ValueError, match="launch must be between 0 and 0, got 3"):
        charts.sm_activity_over_time(matmul, launch=3)


def test_long_loops_chart_every_nth_iteration():
    trace = long_loop_trace(iterations=9000, long_every=3)
    spec = charts.iteration_trend(trace).to_dict()
    (rows,) = _rows(spec)
    assert len(rows) <= charts.MAX_CHART_ROWS
    assert {r["seq"] for r in rows} == set(range(0, 6000, 3))  # "short" runs seq 0..5999, every 3rd kept
    assert spec["title"].endswith("one iteration in 3")


def test_busy_share_is_a_share(matmul):
    (rows,) = _rows(charts.warp_busy_share(matmul).to_dict())
    busy = np.array([r["busy"] for r in rows])
    assert len(rows) == min(len(matmul.warps), charts.WARP_POINTS) and (0 <= busy).all() and (busy <= 1).all()
    assert np.all(np.diff(busy) <= 0)  # ranked busiest first, the busiest and the idlest warp kept
    share = analysis.warp_activity(matmul)["busy_share"]
    assert busy[0] == share.max() and busy[-1] == share.min()
    assert np.allclose(busy + np.array([r["idle"] for r in rows]), 1)


def test_names_stay_data_and_colours_match_the_timeline(matmul):
    named = Trace(matmul.records, {100: XSS, 101: "dot", 102: "store"}, {"tier": "ptx"})
    spec = charts.duration_distribution(named).to_dict()
    assert XSS in {row["scope"] for row in _rows(spec)[0]}
    payload = serializers.timeline_payload(named)
    scale = spec["spec"]["encoding"]["color"]["scale"]
    assert scale["domain"] == payload["scopes"]["names"] and scale["domain"][0] == XSS
    assert scale["range"] == payload["scopes"]["colors"]


def test_dashboard_and_bad_input(matmul):
    shown = matmul.charts()
    assert isinstance(shown, charts.ChartsWidget) and isinstance(shown.chart, alt.VConcatChart)
    assert shown.spec == shown.chart.to_dict()  # the widget draws exactly the altair spec
    with pytest.raises(TypeError, match="charts need a gwatch_nb.Trace, got DataFrame"):
        charts.all_charts(matmul.df)


def test_units_and_ticks_suit_the_data(matmul):
    from support.traces import slow_interpreter_trace
    slow = slow_interpreter_trace()
    spec = charts.duration_distribution(slow).to_dict()
    (rows,) = _rows(spec)
    assert {r["scope"] for r in rows} == {"load", "compute"}
    assert spec["spec"]["encoding"]["x"]["axis"]["title"] == "duration (ms)"  # one unit for every scope
    assert max(r["end"] for r in rows) == pytest.approx(130)
    title = charts.duration_distribution(matmul).to_dict()["spec"]["encoding"]["x"]["axis"]["title"]
    assert title in {"duration (ns)", "duration (µs)"}
    trend = charts.iteration_trend(slow).to_dict()
    assert trend["encoding"]["x"]["axis"]["tickMinStep"] == 1 and trend["encoding"]["x"]["axis"]["format"] == "d"
    assert trend["encoding"]["y"]["axis"]["title"] == "duration (ms)"
    activity = charts.sm_activity_over_time(slow).to_dict()
    assert activity["encoding"]["x"]["axis"]["title"].startswith("time since launch start (ms")
    for _, chart in charts.all_charts(matmul):
        spec = chart.to_dict()
        encoding = spec.get("encoding") or spec["spec"]["encoding"]
        for channel in ("x", "y"):
            assert encoding[channel]["axis"]["labelOverlap"] == "greedy"


def _mark(spec: dict) -> str:
    mark = (spec.get("spec") or spec)["mark"]
    return mark["type"] if isinstance(mark, dict) else mark


def test_interpreter_charts_say_what_host_times_cannot_show(matmul):
    # On the interpreter every program instance is one warp on SM 0, busy from its first
    # marker to its last: the per-SM and busy/idle charts would be solid blocks.
    from support.traces import slow_interpreter_trace
    built = dict(charts.all_charts(slow_interpreter_trace()))
    for caption, key in (("Per-SM activity over time", "sm"), ("Busy vs idle share per warp", "busy")):
        spec = built[caption].to_dict()
        assert _mark(spec) == "text"
        (rows,) = _rows(spec)
        assert " ".join(r["line"] for r in rows) == charts.INTERPRETER_CANNOT_SHOW[key]
    assert _mark(built["Duration per iteration"].to_dict()) == "line"
    gpu = dict(charts.all_charts(matmul))
    assert _mark(gpu["Per-SM activity over time"].to_dict()) == "rect"
    assert _mark(gpu["Busy vs idle share per warp"].to_dict()) == "area"
