"""Lanes: each instance's `depth` is its row in its warp, so instances that overlap without
nesting (the sass tier's interleaved scopes) get rows of their own; and on the sass tier
that overlap is the schedule's, no `crossed` warning."""
import numpy as np
import pytest

import gwatch_nb
from gwatch_nb.perfetto import nested_properly
from gwatch_nb.trace import WARP_KEY
from support.traces import synthetic_trace

# A crosses B (A opens, B opens, A closes, B closes); then C, after both.
CROSSING = [((0, 0, 0), 0, 0, 0, 100, [(10, 1, False), (20, 2, False), (30, 1, True), (40, 2, True),
                                       (50, 3, False), (60, 3, True)])]
NAMES = {1: "A", 2: "B", 3: "C"}


def overlaps_on_a_row(df) -> int:
    """How many instances start before the one before them on their (warp, depth) row ended."""
    keys = [*WARP_KEY, "depth"]
    ordered = df.sort_values([*keys, "start_ns", "end_ns"], kind="stable")
    same_row = (ordered[keys].shift() == ordered[keys]).all(axis=1).to_numpy()
    start, end = ordered["start_ns"].to_numpy(), ordered["end_ns"].to_numpy()
    return int((same_row[1:] & (start[1:] < end[:-1])).sum())


def test_the_sass_fixture_gives_overlapping_scopes_rows_of_their_own(fixture_path):
    trace = gwatch_nb.load(fixture_path("attention_sass_h200.json"))
    assert trace.meta["tier"] == "sass"
    df = trace.df
    assert overlaps_on_a_row(df) == 0
    # In cycles too (ns are rounded): each row's instances end before the next starts.
    keys = [*WARP_KEY, "depth"]
    ordered = df.sort_values([*keys, "start_cycle"], kind="stable")
    same_row = (ordered[keys].shift() == ordered[keys]).all(axis=1).to_numpy()[1:]
    assert (ordered["start_cycle"].to_numpy()[1:] >= ordered["end_cycle"].to_numpy()[:-1])[same_row].all()
    # softmax and dot_pv do overlap in every iteration (ptxas interleaved them), on rows apart.
    softmax = df[df.scope == "softmax"].set_index([*WARP_KEY, "seq"])
    dot_pv = df[df.scope == "dot_pv"].set_index([*WARP_KEY, "seq"])
    both = softmax.add_suffix("_sm").join(dot_pv.add_suffix("_pv"), how="inner")
    overlap = (both.start_ns_sm < both.end_ns_pv) & (both.start_ns_pv < both.end_ns_sm)
    assert overlap.all() and len(both) == len(softmax) == 2048
    assert (both.depth_sm != both.depth_pv).all()
    # A warp needs no more rows than it had instances open at once: here 3.
    assert df.depth.max() == 2
    # Crossing is a property of the schedule on this tier: no warning; the instances all stay.
    assert [w.kind for w in trace.warnings] == []
    assert len(df) == trace.launches.scope_instances.sum() == 8448


@pytest.mark.parametrize("name", ["attention_sass_auto_h200.json", "attention_causal_h200.json",
                                  "matmul_h200.json", "attention_h200.json"])
def test_no_two_instances_of_a_row_overlap_on_any_fixture(fixture_path, name):
    trace = gwatch_nb.load(fixture_path(name))
    assert overlaps_on_a_row(trace.df) == 0
    assert "crossed" not in [w.kind for w in trace.warnings]


@pytest.mark.parametrize("name", ["attention_causal_h200.json", "matmul_h200.json"])
def test_where_scopes_nest_the_row_is_the_nesting_depth(fixture_path, name):
    # Each instance at depth d > 0 lies inside the last one before it at depth d - 1.
    trace = gwatch_nb.load(fixture_path(name))
    assert nested_properly(trace.df, trace.warp_row).all()


def test_crossing_markers_stay_a_warning_on_the_ptx_and_interpreter_tiers():
    for tier in ("ptx", "interpreter"):
        trace = synthetic_trace(CROSSING, NAMES, tier=tier)
        assert [w.kind for w in trace.warnings] == ["crossed"], tier
        assert trace.df.depth.tolist() == [0, 1, 0]  # B crosses A: a row of its own; C takes row 0
        assert overlaps_on_a_row(trace.df) == 0


def test_crossing_is_no_warning_on_the_sass_tier_unless_a_launch_was_traced_on_the_ptx_tier():
    sass = synthetic_trace(CROSSING, NAMES, tier="sass")
    assert sass.warnings == []
    assert sass.df.scope.astype(str).tolist() == ["A", "B", "C"] and sass.df.depth.tolist() == [0, 1, 0]
    # tier auto may trace a kernel of a sass trace on the ptx tier: there markers really cross.
    fallback = synthetic_trace(CROSSING, NAMES, tier="sass", launch_tier="ptx")
    assert [w.kind for w in fallback.warnings] == ["crossed"]


def test_the_crossed_problem_is_still_found_on_the_sass_tier():
    # Only the warning goes: the decoder still sees the crossing (the Perfetto export makes
    # the crossed instance an async slice).
    trace = synthetic_trace(CROSSING, NAMES, tier="sass")
    assert len(trace._launches[0].problems["crossed"]) > 0
    assert nested_properly(trace.df, trace.warp_row).tolist() == [True, False, True]


def test_every_iteration_of_the_sass_attention_shape_gets_the_same_rows():
    # 250,000 iterations over 1,000 warps of the demo's shape: load_kv around dot_qk and
    # dot_pv, softmax starting after dot_qk ends and ending after dot_pv.
    from gwatch_nb import records
    from gwatch_nb.layout import make_tag
    one = [(1, False), (2, False), (4, False), (2, True), (3, False), (4, True), (3, True), (1, True)]
    iterations = 250_000
    tags = np.tile(np.array([make_tag(s, e) for s, e in one], np.uint32), iterations)
    cycles = np.arange(len(tags), dtype=np.int64) * 3
    counts = np.full(1000, len(tags) // 1000, np.int64)
    iv, problems = records.pair_scopes(tags, cycles, counts)
    assert iv.scope_id[:4].tolist() == [1, 2, 4, 3]
    assert np.array_equal(np.unique(iv.depth.reshape(-1, 4), axis=0), [[0, 1, 2, 1]])
    assert len(problems["crossed"]) >= iterations  # at least one instance of every crossing
