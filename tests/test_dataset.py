"""Parquet datasets of real H200 traces: written per run, read back whole with their run,
queried through DuckDB with the answers pandas gives on the same traces."""
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow", reason="Parquet datasets need pyarrow (pip install 'gwatch-nb[dataset]')")
pytest.importorskip("duckdb", reason="dataset queries need duckdb (pip install 'gwatch-nb[dataset]')")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.dataset import scope_quantiles_sql  # noqa: E402

SMALL = os.path.join(FIXTURES, "attention_h200.json")
LARGE = os.path.join(FIXTURES, "attention_4k_h200.json")


@pytest.fixture(scope="module")
def traces():
    return gwatch_nb.load(SMALL), gwatch_nb.load(LARGE)


@pytest.fixture(scope="module")
def dataset(traces, tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    assert traces[0].to_parquet(root, run="N=1024") == "N=1024"
    assert traces[1].to_parquet(root, run="N=4096") == "N=4096"
    return root


def test_every_row_comes_back_with_its_run(traces, dataset):
    df = gwatch_nb.load_many(dataset)
    assert sorted(df["run"].unique()) == ["N=1024", "N=4096"]
    for run, trace in zip(("N=1024", "N=4096"), traces):
        part = df[df["run"] == run].drop(columns="run").reset_index(drop=True)
        # The categories are the union over runs; values and every other dtype come back as written.
        pd.testing.assert_frame_equal(part, trace.df, check_categorical=False)
    launches = gwatch_nb.load_many(dataset, table="launches").set_index("run")
    assert launches.loc["N=4096", "duration_ns"] == 96899 and launches.loc["N=4096", "grid_x"] == 32
    warps = gwatch_nb.load_many(dataset, table="warps")
    assert (warps["run"] == "N=4096").sum() == 1024


def test_archives_read_beside_datasets_and_runs_are_replaced(traces, tmp_path):
    traces[0].to_parquet(tmp_path, run="again")
    traces[1].to_parquet(tmp_path, run="again")  # the run is rewritten, not appended to
    df = gwatch_nb.load_many([tmp_path, SMALL])
    assert df.groupby("run", observed=True).size().to_dict() == {"again": 262144, "attention_h200": 8192}
    assert not list(tmp_path.glob("*/.*partial"))
    default = traces[0].to_parquet(tmp_path)
    assert default.startswith("attn_fwd-2026") and (tmp_path / "instances" / f"{default}.parquet").exists()


def test_queries_answer_as_pandas_does(traces, dataset):
    result = gwatch_nb.query(dataset, "SELECT run, scope, count(*) AS n, median(duration_ns) AS p50, "
                                      "sum(duration_ns) AS total FROM instances GROUP BY ALL ORDER BY run, scope",
                             memory_limit="200MB", threads=1)
    for run, trace in zip(("N=1024", "N=4096"), traces):
        expected = trace.df.groupby("scope", observed=True)["duration_ns"].agg(["size", "median", "sum"])
        got = result[result["run"] == run].set_index("scope")
        for scope, row in expected.iterrows():
            assert (got.loc[scope, "n"], got.loc[scope, "p50"], got.loc[scope, "total"]) == (
                row["size"], row["median"], row["sum"])
    exact = gwatch_nb.query(dataset, scope_quantiles_sql((0.5, 0.95)), memory_limit="200MB").set_index(["run", "scope"])
    for run, trace in zip(("N=1024", "N=4096"), traces):
        for scope, durations in trace.df.groupby("scope", observed=True)["duration_ns"]:
            row = exact.loc[(run, scope)]
            assert row["count"] == len(durations)
            assert row["p50_ns"] == np.quantile(durations, 0.5, method="inverted_cdf")
            assert row["p95_ns"] == np.quantile(durations, 0.95, method="inverted_cdf")
    joined = gwatch_nb.query(dataset, "SELECT l.run, max(i.end_ns) <= max(l.duration_ns) AS inside FROM instances i "
                                      "JOIN launches l USING (run, launch) GROUP BY l.run")
    assert joined["inside"].all() and len(joined) == 2


@pytest.mark.parametrize("call, error, message", [
    (lambda d: gwatch_nb.load(SMALL).to_parquet(d, run="../escape"), ValueError, "run must be"),
    (lambda d: gwatch_nb.load_many(d / "nothing"), ValueError, "expected a dataset directory or a .parquet file"),
    (lambda d: gwatch_nb.load_many(d), FileNotFoundError, "no instances/*.parquet"),
    (lambda d: gwatch_nb.load_many(d, table="events"), ValueError, "table must be one of"),
    (lambda d: gwatch_nb.query(d, "SELECT 1"), FileNotFoundError, "no instances/*.parquet"),
])
def test_bad_input_gets_one_line(tmp_path, call, error, message):
    with pytest.raises(error, match=message.replace("*", r"\*").replace(".", r"\.")):
        call(tmp_path)
