"""The sass tier on the GPU: every corpus kernel with a workload and the examples, traced with the
readings spliced into their compiled code. Outputs are bit-identical with the untraced run, no
event is dropped at the default capacity, every instance lies inside its warp's lifetime, each
warp has as many instances of each scope as on the ptx tier (which the loop trip counts fix),
and the automatic sites find the loops and waits of kernels with no markers at all."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sass_swap
from gwatch_nb import GwatchWarning, do_trace
from gwatch_nb.sass.instrument import AUTO_SCOPE_BASE

pytestmark = pytest.mark.gpu

CASES = {case.name: case for case in sass_swap.CASES}
# Kernels whose markers Triton moves or drops on the ptx tier (a scope around a warp-specialized
# loop reads 0 ns there, the flattened loop's prologue copies its start marker): their instance
# counts are checked against the tile count instead.
PTX_DIFFERS = {"warp-specialized TMA matmul", "flattened persistent matmul"}
# Kernels where ptxas's schedule gives some scope other instance counts than its source loops:
# a loop unrolled into remainder blocks, pipeliner stages peeled before a loop. Their other
# properties are checked all the same. (A warp that exits inside a scope ends it there, as on
# the ptx tier: vector_add_marked and closed_before_return are counted.)
SCHEDULE_DIFFERS = {"nested_loops", "layernorm fwd", "persistent matmul, host TMA descriptors",
                    "persistent matmul, in-kernel TMA descriptors", "grouped GEMM", "cross entropy with ignored rows"}


def _name(case) -> str:
    return getattr(case.fn, "fn", case.fn).__name__


def _trace(case, tier: str, **options):
    workload = case.workload("cuda")
    workload.launch()  # compile and load first, as a user would have
    torch.cuda.synchronize()
    outputs = {}

    def run():
        outputs["traced"] = workload.launch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GwatchWarning)
        trace = do_trace(run, f"^{_name(case)}$", instrumentation_tier=tier, launches="first", **options)
    torch.cuda.synchronize()
    return trace, outputs["traced"], workload.launch()


def _per_warp(trace):
    df = trace.df
    return df.groupby(["block_x", "block_y", "block_z", "warp", "scope_id"]).size()


@pytest.mark.parametrize("name", [name for name in CASES if name != "vector_add (no markers)"])
def test_sass_tier_is_bit_identical_and_counts_what_the_ptx_tier_counts(name):
    case = CASES[name]
    trace, traced, plain = _trace(case, "sass")
    assert all(torch.equal(a, b) for a, b in zip(traced, plain)), "traced outputs differ from the untraced run"
    assert trace.meta["tier"] == "sass" and "compiled kernel" in trace.meta["time_source"]
    assert trace.events_dropped == 0
    assert len(trace.df) > 0 and len(trace.sites) > 0
    warps = trace.warps.set_index(["launch", "block_x", "block_y", "block_z", "warp"])
    df = trace.df.join(warps[["start_ns", "end_ns"]], on=["launch", "block_x", "block_y", "block_z", "warp"],
                       rsuffix="_warp")
    assert (df.start_ns >= df.start_ns_warp).all() and (df.end_ns <= df.end_ns_warp).all()
    assert (df.end_ns >= df.start_ns).all()
    if name in PTX_DIFFERS or name in SCHEDULE_DIFFERS:
        return
    # Each scope has as many instances per warp as on the ptx tier, plus one per pair ptxas put
    # outside every loop besides its pairs in loops (the pipeliner's first iteration, peeled).
    reference, _, _ = _trace(case, "ptx")
    # Scopes the tier left out somewhere for want of registers say so in a warning.
    left_out = {o["scope"] for kernel in trace.meta["sass"].values() for o in kernel["left_out"]}
    assert bool(left_out) == any(w.kind == "sites_left_out" for w in trace.warnings)
    ours = _per_warp(trace)
    theirs = _per_warp(reference)
    ours = ours[~ours.index.get_level_values("scope_id").isin(left_out)]
    theirs = theirs[~theirs.index.get_level_values("scope_id").isin(left_out)]
    assert set(ours.index) == set(theirs.index), (set(ours.index) ^ set(theirs.index)).__len__()
    sites = trace.sites[trace.sites.origin == "marker"]
    for scope in ours.index.get_level_values("scope_id").unique():
        pairs = sites[(sites.scope == scope) & (sites.kind == "start")]
        peeled = int(pairs.loop.isna().sum()) if pairs.loop.notna().any() else 0
        extra = ours.xs(scope, level="scope_id") - theirs.xs(scope, level="scope_id")
        assert ((extra >= 0) & (extra <= peeled)).all(), (scope, extra.value_counts().to_dict(), peeled)


def test_a_scope_around_warp_group_mmas_times_like_the_ptx_tier():
    """dot_qk (101) of the example attention waits on its wgmma on both tiers: their medians agree
    within 25% (the ptx tier's readings are held in place by ptxas, the sass tier's sit in the
    final schedule)."""
    case = CASES["example attention fwd d128"]
    ours, _, _ = _trace(case, "sass")
    theirs, _, _ = _trace(case, "ptx")
    a = ours.df[ours.df.scope_id == 101].duration_ns.median()
    b = theirs.df[theirs.df.scope_id == 101].duration_ns.median()
    assert abs(a / b - 1) <= 0.25, (a, b)


def test_the_flattened_persistent_matmul_pairs_every_tile_on_every_warp():
    case = CASES["flattened persistent matmul"]
    trace, traced, plain = _trace(case, "sass")
    assert all(torch.equal(a, b) for a, b in zip(traced, plain))
    problems = {w.kind for w in trace.warnings}
    assert not problems & {"unclosed", "end_without_start", "nested_same_id"}, problems
    tiles = trace.df[trace.df.scope_id == 300].groupby(["block_x", "warp"]).size()
    assert tiles.min() >= 1 and tiles.nunique() <= 2  # each program takes ceil or floor of tiles / programs


def test_warp_specialized_loops_show_producer_and_consumer_warps():
    case = CASES["warp-specialized TMA matmul"]
    trace, traced, plain = _trace(case, "sass", auto=True)
    assert all(torch.equal(a, b) for a, b in zip(traced, plain))
    df = trace.df
    marked = df[df.scope_id < AUTO_SCOPE_BASE]
    assert (marked.end_ns > marked.start_ns).any(), "markers inside the specialized loop read nothing"
    waits = df[df.scope_id >= AUTO_SCOPE_BASE]
    names = {trace.scope_name(s) for s in waits.scope_id.unique()}
    assert any(n.startswith("mbarrier") for n in names) and any(n.startswith("loop") for n in names), names
    # the producer and consumer warps run different loops: not every warp has every automatic scope
    kinds = waits.groupby("warp").scope_id.nunique()
    assert kinds.nunique() > 1


@pytest.mark.parametrize("name", ["example attention fwd d64 causal", "example softmax", "matmul"])
def test_automatic_sites_trace_kernels_without_markers(name):
    case = CASES[name]
    trace, traced, plain = _trace(case, "sass", auto=True)
    assert all(torch.equal(a, b) for a, b in zip(traced, plain))
    sites = trace.sites
    assert set(sites.origin) - {"marker"}, "no automatic site was traced"
    loops = trace.df[[trace.scope_name(s).startswith("loop") for s in trace.df.scope_id]]
    assert len(loops) > 0 and (loops.end_ns >= loops.start_ns).all()


def test_overflow_is_counted_exactly_at_capacity_2():
    case = CASES["matmul"]
    full, _, _ = _trace(case, "sass")
    small, traced, plain = _trace(case, "sass", capacity=2)
    assert all(torch.equal(a, b) for a, b in zip(traced, plain))
    tried = full.warps.events.to_numpy()
    assert (small.warps.events.to_numpy() == np.minimum(tried, 2)).all()
    assert (small.warps.events.to_numpy() + small.warps.dropped.to_numpy() == tried).all()


MARKERS_NONE_CHILD = """
import json, sys, warnings
import torch
import sass_swap
from gwatch_nb import GwatchWarning, do_trace
from gwatch_nb.triton import MARKERS
case = {c.name: c for c in sass_swap.CASES}[sys.argv[1]]
work = case.workload("cuda")
plain = work.launch()
torch.cuda.synchronize()
got = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", GwatchWarning)
    trace = do_trace(lambda: got.setdefault("out", work.launch()), "^" + case.fn.fn.__name__ + "$",
                     instrumentation_tier="sass", launches="first")
same = all(torch.equal(a, b) for a, b in zip(got["out"], plain))
tiles = trace.df[trace.df.scope_id == 300].groupby(["block_x", "warp"]).size()
print(json.dumps(dict(markers=MARKERS, same=same, instances=len(trace.df), tile_min=int(tiles.min()),
                      warps=len(trace.warps), registers=trace.meta["sass"][case.fn.fn.__name__]["registers"])))
"""


def test_markers_compiled_to_nothing_are_traced_on_the_sass_tier():
    """GWATCH_MARKERS=none: the flattened persistent matmul runs as it would without markers
    (tests/test_markers_none.py) and its tile scope is still traced on every warp."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env.update(GWATCH_MARKERS="none", PYTHONPATH=os.pathsep.join([root, os.path.join(root, "tests")]))
    child = subprocess.run([sys.executable, "-c", MARKERS_NONE_CHILD, "flattened persistent matmul"],
                           capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert child.returncode == 0, child.stderr[-2000:]
    got = json.loads(child.stdout.splitlines()[-1])
    assert got["markers"] == "none" and got["same"] and got["tile_min"] >= 1 and got["instances"] > 0


@pytest.mark.parametrize("name", [name for name in CASES if name != "vector_add (no markers)"])
def test_tier_auto_traces_each_kernel_on_the_sass_tier_or_says_why_not(name):
    """instrumentation_tier="auto" on an H200: the sass tier, or the ptx tier with a
    sass_fallback warning naming why; outputs bit-identical either way."""
    case = CASES[name]
    trace, traced, plain = _trace(case, "auto")
    assert all(torch.equal(a, b) for a, b in zip(traced, plain)), "traced outputs differ from the untraced run"
    tiers = set(trace.launches["tier"])
    fell_back = [w for w in trace.warnings if w.kind == "sass_fallback"]
    assert tiers in ({"sass"}, {"ptx"}) and bool(fell_back) == (tiers == {"ptx"}), (tiers, fell_back)
    assert trace.meta["tier"] == "sass" and not {w.kind for w in trace.warnings} & {"unclosed", "end_without_start"}
