"""Comparisons of traces taken here on the GPU: a kernel given twice the work is found
longer with an interval that excludes zero, and the traces go through a Parquet dataset."""
import functools
import warnings

import pytest

torch = pytest.importorskip("torch")

import attention  # noqa: E402
from gwatch_nb import GwatchWarning, compare, do_trace, query  # noqa: E402

pytestmark = pytest.mark.gpu

LAUNCHES = 5


def _trace(n_ctx: int):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4, n_ctx, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    run = functools.partial(attention.attention, q, k, v)
    run()
    torch.cuda.synchronize()

    def launches():
        for _ in range(LAUNCHES):
            run()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = do_trace(launches, r"attn_fwd", scope_name_map=attention.SCOPES, launches=LAUNCHES)
    assert not [w for w in caught if issubclass(w.category, GwatchWarning)]
    return trace


def test_twice_the_keys_is_found_longer(tmp_path):
    short, long = _trace(1024), _trace(2048)
    assert len(short.launches) == len(long.launches) == LAUNCHES
    cmp = compare(short, long, labels=("N=1024", "N=2048"))
    duration = cmp.kernel.set_index(["measure", "run"]).loc[("duration_ns", "N=2048")]
    # Each program walks twice the key blocks, and the grid has twice the programs.
    assert duration["ci_low"] > 0.5 and isinstance(duration["verdict"], str)
    assert "longer in N=2048" in duration["verdict"]
    assert sorted(cmp.iterations["seq"].unique()) == list(range(1024 // 64))
    itself = compare(short, short)
    assert itself.verdicts == []
    pytest.importorskip("duckdb", reason="the dataset part needs duckdb (pip install 'gwatch-nb[dataset]')")
    short.to_parquet(tmp_path, run="short")
    long.to_parquet(tmp_path, run="long")
    counts = query(tmp_path, "SELECT run, count(*) AS n FROM instances GROUP BY run").set_index("run")["n"]
    assert counts.to_dict() == {"short": len(short.df), "long": len(long.df)}
