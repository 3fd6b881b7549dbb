"""Every corpus kernel traced on a GPU: the traced run computes exactly what the untraced
run does, both match a torch reference, nothing is dropped or flagged, every scope the
PTX keeps shows up, every interval lies inside its warp's lifetime, and where the loops'
trip counts are known each warp recorded exactly the predicted number of events."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from corpus import CASES
from gwatch_nb import GwatchWarning, TraceFailedError, do_trace

pytestmark = pytest.mark.gpu

MARKED = [case for case in CASES if case.scope_ids]
UNMARKED = [case for case in CASES if not case.scope_ids]
WARP_KEYS = ["launch", "block_x", "block_y", "block_z", "warp"]


def _untraced(workload):
    outputs = workload.launch()  # also compiles and loads the kernel before the trace, as in a notebook
    torch.cuda.synchronize()
    return outputs


def _assert_inside_warp_lifetimes(trace):
    df = trace.df
    merged = df.merge(trace.warps[WARP_KEYS + ["start_ns", "end_ns"]], on=WARP_KEYS, suffixes=("", "_warp"))
    assert len(merged) == len(df)
    assert (merged.start_ns >= merged.start_ns_warp).all()
    assert (merged.end_ns <= merged.end_ns_warp).all()
    assert (df.end_ns >= df.start_ns).all()


@pytest.mark.parametrize("case", MARKED, ids=[case.name for case in MARKED])
def test_corpus_kernel_trace_is_exact_and_complete(case):
    workload = case.workload("cuda")
    untraced = _untraced(workload)
    traced = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = do_trace(lambda: traced.setdefault("outputs", workload.launch()), case.pattern,
                         scope_name_map=case.scopes, instrumentation_tier="ptx")
    assert len(traced["outputs"]) == len(untraced) == len(workload.reference)
    for got, expected, reference in zip(traced["outputs"], untraced, workload.reference):
        assert torch.equal(got, expected)
        torch.testing.assert_close(expected.float(), reference.float(), atol=workload.atol, rtol=workload.rtol)

    # Besides the kinds the case expects, a clean trace may carry one warning: instrumenting
    # changed the kernel's resources (grouped GEMM spills when traced), and then meta says by how much.
    costly = [w for w in trace.warnings if w.kind == "instrumentation_cost"]
    said = [str(w.message) for w in caught if issubclass(w.category, GwatchWarning)]
    assert {w.kind for w in trace.warnings if w not in costly} == case.warnings
    assert [p for p in trace.meta["problems"] if p["kind"] != "instrumentation_cost"] == []
    assert len(said) == len(case.warnings) + len(costly)
    assert all(any(kind in m for m in said) for kind in case.warnings)
    (change,) = trace.meta["instrumentation"].values()
    spills_or_loses = change["local_bytes"][1] > change["local_bytes"][0] or \
        change["blocks_per_sm"][1] < change["blocks_per_sm"][0]
    assert bool(costly) == spills_or_loses
    assert trace.events_dropped == 0
    (launch,) = trace.launches.itertuples()
    grid, block = np.prod(launch.grid), np.prod(launch.block)
    assert launch.warps == len(trace.warps) == grid * ((block + 31) // 32)
    assert trace.warps.exited.all()

    assert set(trace.df.scope_id.unique()) == case.scope_ids
    assert set(trace.df.scope.cat.categories) == {case.scopes[i] for i in case.scope_ids}
    # A scope sits at one nesting depth wherever it runs (start/end pairing held up);
    # overlapping instances of a pipelined scope take turns on as many lanes as overlap.
    lanes = trace.df.groupby("scope_id").depth.nunique()
    assert (lanes == 1).all() or "pipelined" in case.warnings
    _assert_inside_warp_lifetimes(trace)
    if workload.events_per_warp is not None:
        np.testing.assert_array_equal(trace.warps.events.to_numpy(), workload.events_per_warp(trace.warps))


@pytest.mark.parametrize("case", UNMARKED, ids=[case.name for case in UNMARKED])
def test_kernel_without_markers_runs_untraced_and_is_reported(case):
    workload = case.workload("cuda")
    untraced = _untraced(workload)
    traced = {}
    with pytest.raises(TraceFailedError, match="no scope_start/scope_end markers"):
        do_trace(lambda: traced.setdefault("outputs", workload.launch()), case.pattern)
    for got, expected, reference in zip(traced["outputs"], untraced, workload.reference, strict=True):
        assert torch.equal(got, expected)
        torch.testing.assert_close(expected, reference, atol=workload.atol, rtol=workload.rtol)
