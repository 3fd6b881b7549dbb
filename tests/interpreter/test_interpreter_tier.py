"""The interpreter tier: markers record host time per program instance (run by
tests/test_interpreter_process.py in a process started with TRITON_INTERPRET=1)."""
import pytest
import torch

from examples import attention
from gwatch_nb import NoMatchingKernelError, do_trace, interpreter


def test_interpreter_tier_records_every_program_instance():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 256, 64, dtype=torch.float16) for _ in range(3))
    out = {}
    trace = do_trace(lambda: out.setdefault("o", attention.attention(q, k, v, causal=True)), r"attn_fwd",
                     scope_name_map=attention.SCOPES, instrumentation_tier="interpreter")
    torch.testing.assert_close(out["o"], attention.reference(q, k, v, causal=True), atol=2e-2, rtol=0)
    assert trace.meta["tier"] == "interpreter"
    assert "interpreter host time" in trace.meta["time_source"] and "not GPU time" in trace.meta["time_source"]
    warps = trace.warps
    assert len(warps) == 2 * 2  # (N_CTX / BLOCK_M) x heads program instances, one "warp" each
    expected = [attention.events_per_warp(256, causal=True, start_m=m) for m in warps.block_x]
    assert warps.events.tolist() == expected
    df = trace.df
    assert set(df.scope.cat.categories) == set(attention.SCOPES.values())
    assert (df.duration_ns > 0).all() and (df.sm == 0).all()
    assert trace.launches.clock_ghz[0] == 1.0
    assert interpreter._active is None


def test_interpreter_launch_limit_and_no_match():
    q = torch.randn(1, 1, 128, 64, dtype=torch.float16)
    trace = do_trace(lambda: [attention.attention(q, q, q) for _ in range(3)], r"attn", launches="first",
                     instrumentation_tier="interpreter")
    assert len(trace.launches) == 1
    with pytest.raises(NoMatchingKernelError, match=r"kernels that launched: attn_fwd \(1x\)"):
        do_trace(lambda: attention.attention(q, q, q), r"^matmul", instrumentation_tier="interpreter")


def test_matching_kernel_without_markers_is_a_clear_failure():
    from gwatch_nb import TraceFailedError
    from corpus_kernels.basics import vector_add
    x = torch.randn(1000)
    out = torch.empty_like(x)
    with pytest.raises(TraceFailedError, match="vector_add: matched, but it has no scope_start/scope_end markers"):
        do_trace(lambda: vector_add[(1,)](x, x, out, 1000, BLOCK=1024), r"^vector_add$",
                 instrumentation_tier="interpreter")
    assert torch.equal(out, x + x)


def test_only_the_chosen_scopes_are_recorded():
    q = torch.randn(1, 1, 256, 64, dtype=torch.float16)
    run = lambda: attention.attention(q, q, q)  # noqa: E731
    every = do_trace(run, r"attn_fwd", scope_name_map=attention.SCOPES, instrumentation_tier="interpreter")
    chosen = do_trace(run, r"attn_fwd", scope_name_map=attention.SCOPES, instrumentation_tier="interpreter",
                      scopes=["dot_qk", 103])
    assert chosen.meta["scopes_traced"] == [101, 103] and every.meta["scopes_traced"] is None
    assert set(chosen.df.scope_id) == {101, 103}
    expected = every.df[every.df.scope_id.isin([101, 103])]
    assert len(chosen.df) == len(expected) > 0
    assert chosen.df.groupby("scope_id").seq.max().to_dict() == expected.groupby("scope_id").seq.max().to_dict()


def test_scopes_that_match_no_marker_are_a_clear_failure():
    from gwatch_nb import TraceFailedError
    q = torch.randn(1, 1, 128, 64, dtype=torch.float16)
    with pytest.raises(TraceFailedError, match=r"attn_fwd: matched, but none of its markers is of the scopes "
                                               r"traced \(7, 999\); it ran untraced"):
        do_trace(lambda: attention.attention(q, q, q), r"attn_fwd", instrumentation_tier="interpreter",
                 scopes=[999, 7])
    with pytest.raises(ValueError, match="scopes='dot' is neither a scope id nor a scope name"):
        do_trace(lambda: attention.attention(q, q, q), r"attn_fwd", instrumentation_tier="interpreter",
                 scopes=["dot"])
