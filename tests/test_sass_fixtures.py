"""The sass tier's real H200 traces (tests/fixtures/attention_sass*_h200.json) downstream:
the DataFrame holds what the sites predict, archives (trace and report) keep the sites and
the tier's metadata, and the Perfetto export carries every instance and names the tier."""
import json

import numpy as np
import pandas as pd
import pytest

import gwatch_nb
from gwatch_nb.cli import main
from gwatch_nb.report import Report, Section, load_report
from gwatch_nb.tiers import TIERS

FIXTURES = ["attention_sass_h200.json", "attention_sass_auto_h200.json"]
#: The example attention's markers (examples/attention.py).
MARKERS = {100: "load_kv", 101: "dot_qk", 102: "softmax", 103: "dot_pv"}


@pytest.fixture(scope="module", params=FIXTURES)
def trace(request):
    from conftest import FIXTURES as folder
    return gwatch_nb.load(f"{folder}/{request.param}")


def _trips(trace) -> int:
    """Iterations of the main loop: the context (grid x BLOCK_M) over BLOCK_N."""
    (launch,) = trace.launches.itertuples()
    config = dict(part.split("=") for part in launch.config.split())
    return launch.grid[0] * int(config["BLOCK_M"]) // int(config["BLOCK_N"])


def test_the_tier_and_its_time_source_are_named(trace):
    assert trace.meta["tier"] == "sass" and trace.meta["time_source"] == TIERS["sass"].time_source
    assert "compiled kernel (after ptxas)" in trace.meta["time_source"]


def test_each_warp_has_the_instances_its_sites_predict(trace):
    """A pair that repeats with a loop runs once an iteration, one outside every loop once a
    run: per warp, a scope's instances are the sum over its pairs."""
    trips = _trips(trace)
    assert trips == 16
    sites = trace.sites
    starts = sites[sites["kind"] == "start"]
    expected = starts.groupby("scope")["loop"].apply(lambda loop: int(np.where(loop.isna(), 1, trips).sum()))
    per_warp = trace.df.groupby(["launch", "block_x", "block_y", "block_z", "warp"]).scope_id.value_counts()
    per_warp = per_warp.unstack(fill_value=0)
    assert len(per_warp) == len(trace.warps) == 128
    assert sorted(per_warp.columns) == sorted(expected.index)
    for scope, count in expected.items():
        assert (per_warp[scope] == count).all(), (trace.scope_name(scope), count)
    assert set(MARKERS) <= set(expected.index)
    assert {trace.scope_name(s) for s in MARKERS} == set(MARKERS.values())


def test_the_dataframe_names_every_scope_and_keeps_int64(trace):
    df = trace.df
    assert set(df["scope"].cat.categories) == set(trace.sites["name"])
    assert {str(df[c].dtype) for c in df.columns if c not in ("kernel", "scope")} == {"int64"}
    assert (df["duration_ns"] >= 0).all() and (df["end_ns"] == df["start_ns"] + df["duration_ns"]).all()
    # Automatic sites' instances carry the names the session gave their scopes.
    names = {int(k): v for k, v in trace.meta["scope_names"].items()}
    automatic = df[df["scope_id"].isin(list(names))]
    assert (len(automatic) > 0) == bool(names)
    assert (automatic["scope"].astype(str).to_numpy() == automatic["scope_id"].map(names).to_numpy()).all()


def test_a_trace_archive_keeps_the_sites_and_the_tiers_metadata(trace, tmp_path):
    trace.save(tmp_path / "again.json")
    again = gwatch_nb.load(tmp_path / "again.json")
    pd.testing.assert_frame_equal(again.sites, trace.sites)
    for key in ("tier", "time_source", "sites", "scope_names", "sass"):
        assert again.meta[key] == trace.meta[key], key
    assert again.scope_names == trace.scope_names
    pd.testing.assert_frame_equal(again.df, trace.df)
    pd.testing.assert_frame_equal(again.warps, trace.warps)
    assert [str(w) for w in again.warnings] == [str(w) for w in trace.warnings]


def test_a_report_archive_keeps_them_and_gwatch_show_reads_them(trace, tmp_path, capsys):
    path = Report("sass", [Section("attention", [trace])]).render(tmp_path / "report.json")
    (again,) = [run for section in load_report(path).sections for run in section.runs]
    pd.testing.assert_frame_equal(again.sites, trace.sites)
    assert again.meta["sass"] == trace.meta["sass"] and again.meta["scope_names"] == trace.meta["scope_names"]
    assert main(["show", str(path), "--sites", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert sum(len(s["readings"]) for s in run["sites"]["scopes"]) == len(trace.sites)
    assert run["header"]["tier"] == "sass" and run["header"]["time_source"] == TIERS["sass"].time_source


def test_perfetto_carries_every_instance_and_names_the_tier(trace, tmp_path):
    path = tmp_path / "trace.perfetto.json"
    trace.to_perfetto(path)
    with open(path) as f:
        document = json.load(f)
    events = pd.DataFrame(document["traceEvents"])
    complete, opened = events[events.ph == "X"], events[events.ph == "b"]
    assert (events.ph == "e").sum() == len(opened)
    # The example's scopes cross (softmax ends before dot_pv): crossed ones become async pairs.
    assert len(complete) + len(opened) == len(trace.df)
    shown = pd.concat([complete, opened])
    assert shown.name.value_counts().sort_index().to_dict() == \
        trace.df["scope"].astype(str).value_counts().sort_index().to_dict()
    (run,) = document["metadata"]["gwatch-nb"]["runs"]
    assert run["tier"] == "sass" and run["time_source"] == TIERS["sass"].time_source


def test_automatic_scopes_that_share_a_source_line_get_names_of_their_own(fixture_path, capsys):
    # The archive was written when the three barriers of attention.py:39 shared one name.
    path = fixture_path("attention_sass_auto_h200.json")
    with open(path) as f:
        assert [v for v in json.load(f)["scope_names"].values()].count("barrier attention.py:39") == 3
    trace = gwatch_nb.load(path)
    names = [trace.scope_name(s) for s in (28672, 28675, 28677)]
    assert names == ["barrier attention.py:39 @235", "barrier attention.py:39 @339", "barrier attention.py:39 @877"]
    assert len(set(trace.scope_names.values())) == len(trace.scope_names)
    assert trace.scope_name(100) == "load_kv"  # the markers' names stay as given
    assert {int(k): v for k, v in trace.meta["scope_names"].items()} == \
        {s: n for s, n in trace.scope_names.items() if s >= 28672}
    assert main(["show", path, "--stats", "--timeline", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    stats = [row["scope"] for row in run["stats"] if row["scope"].startswith("barrier attention.py:39")]
    assert sorted(stats) == names
    letters = {letter for letter, scope in run["timeline"]["legend"].items() if scope in names}
    assert len(letters) == 3  # the text timeline draws each with a letter of its own


def test_names_shared_by_automatic_sites_are_told_apart_where_they_are_made():
    from gwatch_nb.sass.waits import distinct_names
    names = {1: "barrier k.py:3", 2: "loop k.py:2", 3: "barrier k.py:3", 4: "barrier k.py:3"}
    assert distinct_names(names, {1: 40, 2: 10, 3: 90}) == \
        {1: "barrier k.py:3 @40", 2: "loop k.py:2", 3: "barrier k.py:3 @90", 4: "barrier k.py:3 #4"}
