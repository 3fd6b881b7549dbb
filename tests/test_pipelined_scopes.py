"""Scopes the compiler moved: in the tutorials' flattened persistent matmul Triton's
pipeliner copies the tile's start marker into the loop's prologue, so the next tile
starts before this one ends (instances overlap: paired first in, first out, and said
so); where Triton left no instruction between a scope's markers, the scope measures
0 ns every time (said so, naming it). Compiled for sm_90a here, traced on the GPU."""
import re

import numpy as np
import pytest

from compile_kernels import compile_ptx
from corpus import CASES
from gwatch_nb import ptx
from support.traces import synthetic_trace

(FLATTENED,) = [c for c in CASES if c.name == "flattened persistent matmul"]
TILE = 300


def _tile_loop(tiles: int, ahead: int, tile_ns: int = 100, offset_ns: int = 50):
    """One warp's events as the pipelined loop records them: tile t ends at (t + 1) tile
    times, and starts ``ahead`` tiles early (the first ``ahead`` starts in the prologue)."""
    starts = [offset_ns + (t - ahead) * tile_ns + tile_ns // 2 if t >= ahead else offset_ns + t for t in range(tiles)]
    ends = [offset_ns + (t + 1) * tile_ns for t in range(tiles)]
    return sorted([(ns, TILE, False) for ns in starts] + [(ns, TILE, True) for ns in ends])


def test_the_pipeliner_copies_the_tile_start_into_the_prologue():
    source = compile_ptx(FLATTENED.fn, FLATTENED.signature, FLATTENED.constexprs, FLATTENED.num_warps,
                         FLATTENED.num_stages)
    starts = re.findall(rf"// gwatch\.scope_start {TILE}\b", source)
    ends = re.findall(rf"// gwatch\.scope_end {TILE}\b", source)
    assert len(starts) > len(ends) >= 1, (len(starts), len(ends))
    instrumented = ptx.instrument(source)
    kinds = [s.kind for s in instrumented.sites if s.scope_id == TILE]
    assert kinds.count("start") == len(starts) and kinds.count("end") == len(ends)
    assert len(ptx.assemble(instrumented.ptx)) > 0  # the instrumented kernel builds for sm_90a


@pytest.mark.parametrize("ahead", [1, 2])
def test_overlapping_tiles_pair_first_in_first_out_and_say_so(ahead):
    warps = [((b, 0, 0), 0, b, 0, 2000, _tile_loop(6, ahead, offset_ns=50)) for b in range(3)]
    trace = synthetic_trace(warps, {TILE: "tile"})
    assert [w.kind for w in trace.warnings] == ["pipelined"]
    assert trace.warnings[0].count == 3  # one per warp whose tiles overlap
    assert "first in, first out" in str(trace.warnings[0])
    df = trace.df
    assert len(df) == 3 * 6
    for _, tiles in df.groupby("block_x"):
        assert tiles.seq.tolist() == list(range(6))
        # Each tile ends at its own end: tile t at (t + 1) * 100 ns after the loop began.
        assert (tiles.end_ns.diff().dropna() == 100).all()
        assert (tiles.start_ns.iloc[1:].to_numpy() < tiles.end_ns.iloc[:-1].to_numpy()).all()  # they overlap
        # Lanes: overlapping tiles never share a depth.
        for _, lane in tiles.groupby("depth"):
            assert (lane.start_ns.iloc[1:].to_numpy() >= lane.end_ns.iloc[:-1].to_numpy()).all()


def test_a_scope_with_no_code_left_between_its_markers_is_named():
    warps = [((0, 0, 0), w, 0, 0, 1000, [(100, 1, False), (400, 1, True), (500, 2, False), (500, 2, True),
                                          (600, 2, False), (600, 2, True)]) for w in range(2)]
    trace = synthetic_trace(warps, {1: "load", 2: "store"})
    (warning,) = trace.warnings
    assert warning.kind == "zero_length" and warning.count == 4
    assert str(warning).startswith("zero_length: scope store: every instance measures 0 ns: its start and end "
                                   "markers share one clock reading")
    # One instance that takes time clears the scope: then 0 ns is a measurement.
    warps[0][5][-1] = (601, 2, True)
    assert synthetic_trace(warps, {1: "load", 2: "store"}).warnings == []


@pytest.mark.gpu
def test_tiles_of_the_pipelined_persistent_matmul_overlap_on_the_gpu():
    from gwatch_nb import do_trace

    workload = FLATTENED.workload("cuda")
    workload.launch()  # compiled and loaded before the trace, as in a notebook
    with pytest.warns(Warning, match="pipelined"):
        trace = do_trace(workload.launch, FLATTENED.pattern, scope_name_map=FLATTENED.scopes,
                         instrumentation_tier="ptx")
    assert {w.kind for w in trace.warnings} == {"pipelined"}
    df = trace.df
    np.testing.assert_array_equal(trace.warps.events.to_numpy(), workload.events_per_warp(trace.warps))
    assert (df.duration_ns > 0).all()
    keys = ["block_x", "warp"]
    ordered = df.sort_values(keys + ["seq"])
    same_warp = (ordered[keys].shift() == ordered[keys]).all(axis=1)
    overlap = (ordered.start_ns.to_numpy()[1:] < ordered.end_ns.to_numpy()[:-1]) & same_warp.to_numpy()[1:]
    assert overlap.any(), "no tile started before the previous one ended: the loop was not pipelined"
    # First in, first out: both the starts and the ends of a warp's tiles come in seq order.
    for column in ("start_ns", "end_ns"):
        assert (ordered[column].diff()[same_warp] > 0).all()


def test_overlapping_tiles_reach_perfetto_once_each_and_never_overlap_on_a_thread(tmp_path):
    import json

    trace = synthetic_trace([((0, 0, 0), 0, 0, 0, 2000, _tile_loop(6, 2))], {TILE: "tile"})
    trace.to_perfetto(tmp_path / "t.perfetto.json")
    events = json.loads((tmp_path / "t.perfetto.json").read_text())["traceEvents"]
    slices = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["ph"] == "X")
    unnested = [e for e in events if e["ph"] == "b"]
    assert len(slices) + len(unnested) == len(trace.df) == 6
    # What sits on the thread itself nests (here: is disjoint); the overlapping rest is async.
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(slices, slices[1:]))
    assert unnested and len([e for e in events if e["ph"] == "e"]) == len(unnested)
