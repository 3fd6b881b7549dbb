"""The tracing engine on a real GPU: outputs unchanged, every event where the loops put
it, nothing dropped, other kernels untouched, and the process left as it was."""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from examples import attention
from examples import matmul
from gwatch_nb import GwatchWarning, NoMatchingKernelError, TraceFailedError, do_trace
from gwatch_nb.cuda import driver

pytestmark = pytest.mark.gpu


def _free_bytes() -> int:
    torch.cuda.synchronize()
    return driver.free_memory()[0]


def _check_inside_warp_lifetimes(trace):
    df, warps = trace.df, trace.warps
    keys = ["launch", "block_x", "block_y", "block_z", "warp"]
    merged = df.merge(warps[keys + ["start_ns", "end_ns"]], on=keys, suffixes=("", "_warp"))
    assert len(merged) == len(df)
    assert (merged.start_ns >= merged.start_ns_warp).all()
    assert (merged.end_ns <= merged.end_ns_warp).all()
    assert (df.duration_ns >= 0).all()


def test_matmul_trace_is_exact_and_complete():
    torch.manual_seed(0)
    a = torch.randn(2048, 1024, device="cuda", dtype=torch.float16)
    b = torch.randn(1024, 1536, device="cuda", dtype=torch.float16)
    expected = matmul.matmul(a, b)
    out = {}
    trace = do_trace(lambda: out.setdefault("c", matmul.matmul(a, b)), r"matmul_kernel", dsl="triton",
                     scope_name_map=matmul.SCOPES, instrumentation_tier="ptx")
    assert torch.equal(out["c"], expected)
    (launch,) = trace.launches.itertuples()
    warps = (2048 // 128) * (1536 // 128) * 8
    assert launch.warps == warps and launch.events_dropped == 0 and launch.missing_warps == 0
    assert (trace.warps.events == matmul.events_per_warp(1024)).all()
    assert 0.5 < launch.clock_ghz < 3.0
    counts = trace.df.groupby("scope", observed=True).size().to_dict()
    assert counts == {"load": warps * 16, "dot": warps * 16, "store": warps}
    assert (trace.df.depth == 0).all()
    assert trace.df[trace.df.scope == "dot"].seq.max() == 15
    assert trace.warnings == []
    _check_inside_warp_lifetimes(trace)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_attention_trace_is_exact_and_complete(causal, head_dim):
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 3, 1024, head_dim, device="cuda", dtype=torch.float16) for _ in range(3))
    expected = attention.attention(q, k, v, causal=causal)
    out = {}
    trace = do_trace(lambda: out.setdefault("o", attention.attention(q, k, v, causal=causal)), r".*attn_fwd.*",
                     scope_name_map=attention.SCOPES)
    assert torch.equal(out["o"], expected)
    torch.testing.assert_close(out["o"], attention.reference(q, k, v, causal=causal), atol=2e-2, rtol=0)
    warps = trace.warps
    predicted = np.array([attention.events_per_warp(1024, causal=causal, start_m=m) for m in warps.block_x])
    assert (warps.events.to_numpy() == predicted).all()
    assert trace.events_dropped == 0 and trace.warnings == []
    assert set(trace.df.scope.cat.categories) == set(attention.SCOPES.values())
    _check_inside_warp_lifetimes(trace)


def test_only_the_chosen_scopes_are_traced_and_the_others_cost_nothing():
    torch.manual_seed(2)
    q, k, v = (torch.randn(1, 2, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    expected = attention.attention(q, k, v)
    out = {}
    trace = do_trace(lambda: out.setdefault("o", attention.attention(q, k, v)), r"attn_fwd",
                     scope_name_map=attention.SCOPES, scopes=["dot_qk", "dot_pv"])
    assert torch.equal(out["o"], expected)
    assert trace.meta["scopes_traced"] == [101, 103]
    # Two of the four scopes: half the events of every warp, nothing dropped.
    assert (trace.warps.events == attention.events_per_warp(1024) // 2).all()
    assert trace.events_dropped == 0 and trace.warnings == []
    counts = trace.df.groupby("scope", observed=True).size().to_dict()
    assert counts == {"dot_qk": len(trace.warps) * 16, "dot_pv": len(trace.warps) * 16}
    _check_inside_warp_lifetimes(trace)
    with pytest.raises(TraceFailedError, match=r"none of its markers is of the scopes traced \(7\)"):
        do_trace(lambda: attention.attention(q, k, v), r"attn_fwd", scopes=[7])


def test_kernels_compiled_before_and_during_the_trace_are_both_found():
    x = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    before = matmul.matmul(x, x, block_m=64, block_n=64, block_k=32, num_warps=4)  # loaded before the trace

    def run():
        matmul.matmul(x, x, block_m=64, block_n=64, block_k=32, num_warps=4)
        matmul.matmul(x, x, block_m=64, block_n=128, block_k=32, num_warps=4)  # compiled during it

    trace = do_trace(run, r"matmul_kernel", scope_name_map=matmul.SCOPES)
    assert len(trace.launches) == 2
    assert trace.launches.warps.tolist() == [4 * 4 * 4, 4 * 2 * 4]
    assert torch.equal(before, matmul.matmul(x, x, block_m=64, block_n=64, block_k=32, num_warps=4))


def test_only_matching_kernels_are_swapped():
    x = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    out = {}

    def run():
        out["sum"] = x + 1  # a torch kernel
        out["mm"] = matmul.matmul(x, x, block_m=64, block_n=64, block_k=64, num_warps=4)

    trace = do_trace(run, r"^matmul_kernel$")
    assert torch.equal(out["sum"], x + 1)
    assert set(trace.df.kernel) == {"matmul_kernel"}


def test_no_match_names_the_kernels_that_launched():
    x = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    with pytest.raises(NoMatchingKernelError, match="matmul_kernel"):
        do_trace(lambda: matmul.matmul(x, x, block_m=64, block_n=64, block_k=64, num_warps=4), r"no_such_kernel")


def test_overflow_is_counted_exactly_and_reported():
    x = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    expected = matmul.matmul(x, x)
    out = {}
    with pytest.warns(GwatchWarning, match=r"capacity=\d+ would keep them all"):
        trace = do_trace(lambda: out.setdefault("c", matmul.matmul(x, x)), r"matmul_kernel", capacity=6)
    assert torch.equal(out["c"], expected)
    per_warp = matmul.events_per_warp(512)
    assert (trace.warps.events == 6).all()
    assert (trace.warps.dropped == per_warp - 6).all()
    (warning,) = [w for w in trace.warnings if w.kind == "events_dropped"]
    assert warning.count == len(trace.warps) * (per_warp - 6)
    assert f"capacity={per_warp}" in warning.message


def test_exception_in_fn_leaves_nothing_behind_and_tracing_works_again():
    x = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    expected = matmul.matmul(x, x)
    free_before = _free_bytes()

    def failing():
        matmul.matmul(x, x)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        do_trace(failing, r"matmul_kernel")
    assert _free_bytes() == free_before
    assert torch.equal(matmul.matmul(x, x), expected)  # the original runs again, unswapped
    trace = do_trace(lambda: matmul.matmul(x, x), r"matmul_kernel")
    assert trace.events_dropped == 0 and len(trace.launches) == 1
    assert _free_bytes() == free_before


def test_launch_limit_keeps_the_first_launches():
    x = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    trace = do_trace(lambda: [matmul.matmul(x, x, block_m=64, block_n=64, num_warps=4) for _ in range(5)],
                     r"matmul_kernel", launches=2)
    assert len(trace.launches) == 2
    assert all(np.isfinite(r.info["kernel_ms"]) for r in trace.records)


def test_trace_round_trips_through_an_archive(tmp_path):
    import pandas as pd
    import gwatch_nb
    x = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    trace = do_trace(lambda: matmul.matmul(x, x), r"matmul_kernel", scope_name_map=matmul.SCOPES)
    trace.save(tmp_path / "t.json")
    again = gwatch_nb.load(tmp_path / "t.json")
    pd.testing.assert_frame_equal(again.df, trace.df)
    pd.testing.assert_frame_equal(again.warps, trace.warps)
    assert re.search(r"GPU", again.meta["time_source"])
