"""The timeline widget's Python side: what it sends (binary, exact, in df order) and what
it reads back (the selection), on real H200 traces."""
import json

import numpy as np
import pytest

pytest.importorskip("anywidget", reason="the widget needs anywidget (pip install anywidget)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb import serializers  # noqa: E402
from gwatch_nb.trace import Trace  # noqa: E402
from gwatch_nb.widget import TimelineWidget  # noqa: E402
from ipywidgets.widgets.widget import _remove_buffers  # noqa: E402
from support.traces import nested_trace  # noqa: E402


def _array(column: dict) -> np.ndarray:
    return np.frombuffer(column["view"], dtype=np.dtype(column["dtype"]).newbyteorder("<"))


@pytest.fixture(scope="module")
def attention():
    return gwatch_nb.load(f"{FIXTURES}/attention_4k_h200.json")


def test_state_travels_as_binary_buffers_not_json_lists(attention):
    widget = attention.widget()
    state, _, buffers = _remove_buffers(widget.get_state())
    text = json.dumps(state)  # everything left must be small JSON
    assert len(text) < 40_000
    assert sum(len(b) for b in buffers) >= 8 * len(attention.df)
    assert "view" not in json.dumps(state["payload"]["instances"])


def test_payload_reproduces_every_instance_exactly_in_df_order(attention):
    df = attention.df
    payload = serializers.timeline_payload(attention)
    inst = payload["instances"]
    assert np.array_equal(_array(inst["start_ns"]).astype(np.int64), df["start_ns"].to_numpy())
    assert np.array_equal(_array(inst["duration_ns"]).astype(np.int64), df["duration_ns"].to_numpy())
    names = payload["scopes"]["names"]
    assert [names[c] for c in _array(inst["scope"])[:8]] == list(df["scope"].astype(str)[:8])
    assert np.array_equal(_array(inst["seq"]), df["seq"].to_numpy())
    # Each warp's rows first[w]..first[w+1] are exactly that warp's instances.
    warps = attention.warps
    first = _array(payload["warps"]["first"])
    for w in (0, 1, 517, len(warps) - 1):
        part = df.iloc[first[w]:first[w + 1]]
        assert len(part) == warps["events"][w] // 2
        assert (part["block_x"] == warps["block_x"][w]).all() and (part["warp"] == warps["warp"][w]).all()
    assert len(payload["scopes"]["colors"]) == len(names)


def test_times_stay_exact_beyond_32_bits():
    ns = np.array([0, 2 ** 32 + 1, 2 ** 52 + 3], np.int64)
    column = serializers.binary_array(serializers._times(ns))
    assert column["dtype"] == "float64"
    assert np.array_equal(_array(column).astype(np.int64), ns)
    assert serializers.binary_array(serializers._times(np.array([5, 2 ** 32 - 1])))["dtype"] == "uint32"
    with pytest.raises(OverflowError, match="2\\*\\*53"):
        serializers._times(np.array([2 ** 60]))


def test_nested_scopes_carry_their_depth():
    trace = nested_trace()
    payload = serializers.timeline_payload(trace)
    depth = _array(payload["instances"]["depth"])
    assert sorted(set(depth.tolist())) == [0, 1]
    assert np.array_equal(depth, trace.df["depth"].to_numpy())
    assert payload["tier"] == "interpreter" and "not GPU time" in payload["time_source"]


def test_selection_maps_back_to_the_dataframe_row(attention):
    widget = TimelineWidget(attention)
    assert widget.selected_row is None
    widget.selected = {"row": 12345, "scope": "softmax"}
    row = widget.selected_row
    assert row.name == attention.df.index[12345]
    assert row["scope"] == attention.df["scope"].iloc[12345]
    widget.selected = {"row": len(attention.df)}
    assert widget.selected_row is None


def test_several_launches_are_all_sent_and_the_launch_is_checked(attention):
    two = Trace(attention.records * 2, attention.scope_names, {"tier": "ptx"})
    widget = two.widget(launch=1, height=300)
    launches = widget.payload["launches"]
    assert len(launches) == 2 and launches[1]["instances"] == len(attention.df)
    assert np.array_equal(np.unique(_array(widget.payload["warps"]["launch"])), [0, 1])
    with pytest.raises(Exception, match="launch must be between 0 and 1, got 2"):
        widget.launch = 2
    with pytest.raises(Exception, match="height must be at least 120"):
        TimelineWidget(attention, height=10)


def test_bad_input_gets_a_one_line_error(attention):
    with pytest.raises(TypeError, match="needs a gwatch_nb.Trace, got DataFrame"):
        TimelineWidget(attention.df)


def test_bytes_per_instance_is_a_small_constant(attention):
    small = gwatch_nb.load(f"{FIXTURES}/attention_h200.json")
    for trace in (small, attention):
        per_instance = serializers.payload_nbytes(serializers.timeline_payload(trace)) / len(trace.df)
        assert per_instance < 13


@pytest.mark.parametrize("name", ["attention_sass_h200.json", "attention_sass_auto_h200.json"])
def test_a_sass_trace_sends_every_reading_for_the_details(name):
    trace = gwatch_nb.load(f"{FIXTURES}/{name}")
    widget = trace.widget()
    state, _, _ = _remove_buffers(widget.get_state())
    sent = json.loads(json.dumps(state["payload"]["sites"], allow_nan=False))  # plain JSON, no NaN
    assert "own / span" in sent["rule"]
    rows = {r["site"]: r for r in sent["rows"]}
    sites = trace.sites
    assert len(rows) == len(sent["rows"]) == len(sites)
    for row in sites.itertuples():
        r = rows[row.site]
        assert (r["kernel"], r["scope_id"], r["scope"], r["kind"], r["pair"], r["origin"], r["index"], r["store"],
                r["instruction"], r["block"]) == (row.kernel, row.scope, row.name, row.kind, row.pair, row.origin,
                                                  row.index, row.store, row.instruction, row.block)
        assert [r[c] for c in ("loop", "span", "own", "other_scopes", "unscoped", "inferred")] == \
            [None if np.isnan(getattr(row, c)) else int(getattr(row, c))
             for c in ("loop", "span", "own", "other_scopes", "unscoped", "inferred")]
        assert (r["sharpness"] is None) == np.isnan(row.span)
    # A scope's readings are sent together, as the details list them.
    order = [r["scope_id"] for r in sent["rows"]]
    assert all(order.index(s) + order.count(s) - 1 == len(order) - 1 - order[::-1].index(s) for s in set(order))


def test_other_tiers_send_no_sites(attention):
    assert "sites" not in serializers.timeline_payload(attention)
