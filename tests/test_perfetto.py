"""Perfetto / Chrome trace export: parsed back, every scope instance is there once, at its
exact ns, on its warp's thread in its SM's process, and events nest on every thread."""
import json
import re

import numpy as np
import pandas as pd
import pytest

import gwatch_nb
from gwatch_nb.report import Report, Section
from support.traces import synthetic_trace


def _spans(*pairs):
    """[(start, end, scope_id), ...] -> start/end events in time order."""
    events = [(s, sid, False) for s, _, sid in pairs] + [(e, sid, True) for _, e, sid in pairs]
    return sorted(events, key=lambda e: (e[0], e[2]))


def _read(path):
    with open(path) as f:
        document = json.load(f)
    events = pd.DataFrame(document["traceEvents"])
    meta = events[events.ph == "M"]
    names = {(row.name, row.pid, row.tid if row.name.startswith("thread") else None): row.args
             for row in meta.itertuples()}
    return document, events, names


def _check_nesting(x_events: pd.DataFrame) -> None:
    """On every thread, each event lies inside every event still open when it starts."""
    for _, thread in x_events.groupby(["pid", "tid"]):
        # File order breaks ties between equal starts: a parent is written before its child.
        thread = thread.assign(order=np.arange(len(thread))).sort_values(["start", "order"], kind="stable")
        stack = []
        for start, end in zip(thread.start, thread.end):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], "an event crosses the end of the event around it"
            stack.append(end)


def _x_events(events: pd.DataFrame) -> pd.DataFrame:
    x = events[events.ph == "X"].copy()
    # Perfetto reads a JSON double ts as int(ts * 1000): that must be the exact ns.
    x["start"] = (x.ts * 1000).astype(np.int64)
    x["dur_ns"] = (x.dur * 1000).astype(np.int64)
    assert ((x.ts * 1000).round().astype(np.int64) == x.start).all()
    x["end"] = x.start + x.dur_ns
    return x


@pytest.mark.parametrize("name", ["attention_4k_h200.json", "matmul_overflow_h200.json"])
def test_real_trace_round_trips(fixture_path, tmp_path, name):
    trace = gwatch_nb.load(fixture_path(name))
    path = tmp_path / "trace.perfetto.json"
    trace.to_perfetto(path)
    document, events, names = _read(path)
    assert "displayTimeUnit" not in document  # Perfetto would read ts in that unit instead of µs
    x = _x_events(events)
    df = trace.df
    assert len(x) == len(df) and set(events.ph) == {"M", "X"}
    _check_nesting(x)

    process = {pid: int(re.fullmatch(r"SM (\d+)", args["name"]).group(1))
               for (kind, pid, _), args in names.items() if kind == "process_name"}
    thread = {tid: tuple(map(int, re.fullmatch(r"block \((\d+),(\d+),(\d+)\) warp (\d+)", args["name"]).groups()))
              for (kind, _, tid), args in names.items() if kind == "thread_name"}
    block_warp = np.array([thread[t] for t in x.tid])
    written = pd.DataFrame({
        "sm": [process[p] for p in x.pid], "block_x": block_warp[:, 0], "block_y": block_warp[:, 1],
        "block_z": block_warp[:, 2], "warp": block_warp[:, 3], "scope": x.name.to_numpy(),
        "scope_id": [a["scope_id"] for a in x.args], "seq": [a["seq"] for a in x.args],
        "start_ns": x.start.to_numpy(), "duration_ns": x.dur_ns.to_numpy()})
    expected = df[list(written.columns)].astype({"scope": str})
    key = list(written.columns)
    pd.testing.assert_frame_equal(
        written.astype(expected.dtypes.to_dict()).sort_values(key, ignore_index=True),
        expected.sort_values(key, ignore_index=True))



def test_nested_scopes_nest_and_crossed_ones_become_async(tmp_path):
    trace = synthetic_trace([
        # Properly nested: A around B and C, C around D; B starts at A's very start.
        ((0, 0, 0), 0, 3, 0, 200, _spans((10, 150, 1), (10, 40, 2), (60, 120, 3), (70, 90, 4))),
        # Crossed: X opens, Y opens, X closes, Y closes; then Z on its own.
        ((1, 0, 0), 0, 5, 0, 200, [(0, 7, False), (10, 8, False), (20, 7, True), (30, 8, True),
                                   (40, 9, False), (50, 9, True)]),
    ], {1: "A", 2: "B", 3: "C", 4: "D", 7: "X", 8: "Y", 9: "Z"})
    assert [w.kind for w in trace.warnings] == ["crossed"]
    path = tmp_path / "nested.perfetto.json"
    trace.to_perfetto(path)
    _, events, _ = _read(path)
    x = _x_events(events)
    _check_nesting(x)
    assert sorted(x.name) == ["A", "B", "C", "D", "X", "Z"]
    unnested = events[events.ph.isin(["b", "e"])]
    assert list(unnested.ph) == ["b", "e"] and set(unnested.name) == {"Y"} and unnested.id.nunique() == 1
    assert len(x) + (unnested.ph == "b").sum() == len(trace.df)
    b_ts, e_ts = (unnested.set_index("ph").ts * 1000).astype(np.int64)[["b", "e"]]
    y = trace.df[trace.df.scope == "Y"].iloc[0]
    assert (b_ts, e_ts) == (y.start_ns, y.end_ns)
    # A parent sharing its child's start comes first in the file.
    first_two = x[x.tid == x.tid.min()].name.tolist()[:2]
    assert first_two == ["A", "B"]


def test_processes_can_be_blocks(fixture_path, tmp_path):
    trace = gwatch_nb.load(fixture_path("attention_causal_h200.json"))
    path = tmp_path / "blocks.perfetto.json"
    trace.to_perfetto(path, group_by="block")
    _, events, names = _read(path)
    processes = [args["name"] for (kind, _, _), args in names.items() if kind == "process_name"]
    blocks = trace.warps[["block_x", "block_y", "block_z"]].drop_duplicates()
    assert sorted(processes) == sorted(f"block ({x},{y},{z})" for x, y, z in blocks.itertuples(index=False))
    threads = [args["name"] for (kind, _, _), args in names.items() if kind == "thread_name"]
    assert len(threads) == len(trace.warps) and all(re.fullmatch(r"warp \d+ \(SM \d+\)", t) for t in threads)
    _check_nesting(_x_events(events))
    with pytest.raises(ValueError, match="supported: sm, block"):
        trace.to_perfetto(tmp_path / "x.perfetto.json", group_by="warp")


def test_runs_of_a_report_get_their_own_processes_and_threads(fixture_path, tmp_path):
    first = gwatch_nb.load(fixture_path("matmul_h200.json"))
    second = gwatch_nb.load(fixture_path("attention_causal_h200.json"))
    report = Report("two runs", [Section("kernels", [first, second])])
    path = report.render(tmp_path / "report.perfetto.json")
    document, events, names = _read(path)
    x = _x_events(events)
    assert len(x) == len(first.df) + len(second.df)
    processes = [args["name"] for (kind, _, _), args in names.items() if kind == "process_name"]
    assert all(re.fullmatch(r"kernels · run [12] · SM \d+", name) for name in processes)
    assert {name.split(" · SM")[0] for name in processes} == {"kernels · run 1", "kernels · run 2"}
    thread_pids = {(pid, tid) for (kind, pid, tid), _ in names.items() if kind == "thread_name"}
    assert len({tid for _, tid in thread_pids}) == len(first.warps) + len(second.warps)
    by_run = [x[x.name.isin(["load", "dot", "store"])], x[x.name.isin(["load_kv", "dot_qk", "softmax", "dot_pv"])]]
    assert set(by_run[0].pid).isdisjoint(by_run[1].pid) and set(by_run[0].tid).isdisjoint(by_run[1].tid)
    assert [run["label"] for run in document["metadata"]["gwatch-nb"]["runs"]] == ["kernels · run 1",
                                                                                  "kernels · run 2"]
