"""Many traces as one Parquet dataset: written per run, read together, queried by DuckDB.

A dataset is a directory with one folder per table, one file per run in each::

    DIR/instances/RUN.parquet   one row per scope instance (Trace.df's columns)
    DIR/warps/RUN.parquet       one row per warp (Trace.warps)
    DIR/launches/RUN.parquet    one row per launch (Trace.launches)

Every row carries its ``run`` (a string column), so pandas, Polars and DuckDB read a
sweep, many launches or many processes' traces as one table without knowing the layout;
the file's metadata holds the trace's meta and scope names. ``query`` runs SQL over a
dataset through DuckDB, which streams the files and spills to disk: a dataset larger
than memory is queried within ``memory_limit``. pyarrow and duckdb are the optional
extra ``gwatch-nb[dataset]``."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from .trace import Trace

TABLES = ("instances", "warps", "launches")
METADATA_KEY = b"gwatch-nb"
_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]{0,199}$")


def _require(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"Parquet datasets need {module}: pip install 'gwatch-nb[dataset]'") from None


def check_run(run: str) -> str:
    """A run name is a file name: letters, digits and . _ = + - (so it is never a path)."""
    if not isinstance(run, str) or not _RUN_NAME.match(run):
        raise ValueError(f"run must be 1-200 letters, digits or . _ = + - (starting with a letter or digit), "
                         f"got {run!r}")
    return run


def default_run(trace: "Trace") -> str:
    """The trace's kernels and creation time, e.g. ``attn_fwd-20261130T133700``."""
    kernels = "+".join(sorted({r.kernel for r in trace.records})) or "trace"
    created = re.sub(r"[^0-9T]", "", str(trace.meta.get("created", "")))[:15]
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", f"{kernels}-{created}" if created else kernels)[:200]


def tables(trace: "Trace", run: str) -> dict[str, "pa.Table"]:
    """The trace's instances, warps and launches as Arrow tables with a ``run`` column."""
    pa = _require("pyarrow")
    launches = trace.launches.copy()
    for column in ("grid", "block"):  # tuples become three integer columns
        if len(launches):
            launches[[f"{column}_x", f"{column}_y", f"{column}_z"]] = list(launches.pop(column))
        else:
            launches.pop(column)
    frames = {"instances": trace.df, "warps": trace.warps, "launches": launches}
    metadata = {METADATA_KEY: json.dumps({"run": run, "meta": trace.meta, "scope_names": {
        str(k): v for k, v in trace.scope_names.items()}}, default=str).encode()}
    out = {}
    for name, frame in frames.items():
        table = pa.Table.from_pandas(frame, preserve_index=False)
        runs = pa.DictionaryArray.from_arrays(pa.array([0] * len(frame), pa.int32()), pa.array([run]))
        table = table.add_column(0, "run", runs)
        out[name] = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    return out


def write(trace: "Trace", directory, run: str | None = None) -> str:
    """Write the trace into the dataset at ``directory`` as run ``run``; returns the run.
    A run already there is replaced (each file written whole, then renamed)."""
    _require("pyarrow")
    import pyarrow.parquet as pq

    run = check_run(run if run is not None else default_run(trace))
    root = Path(os.fspath(directory))
    for name, table in tables(trace, run).items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{run}.parquet.partial"
        pq.write_table(table, partial, compression="zstd", row_group_size=1 << 20)
        os.replace(partial, folder / f"{run}.parquet")
    return run


def _files(source, table: str) -> list[str]:
    path = Path(os.fspath(source))
    if path.is_dir():
        found = sorted(str(p) for p in (path / table).glob("*.parquet"))
        if not found:
            raise FileNotFoundError(f"{path}: no {table}/*.parquet (not a gwatch-nb dataset written by to_parquet)")
        return found
    if path.suffix == ".parquet":
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        return [str(path)]
    raise ValueError(f"{path}: expected a dataset directory or a .parquet file")


def load_many(paths: Iterable | str | os.PathLike, table: str = "instances") -> "pd.DataFrame":
    """One DataFrame of ``table`` ("instances", "warps" or "launches") from datasets
    (directories written by ``Trace.to_parquet``), .parquet files, or trace and report
    archives (.json, each run named after its file). Every row carries its ``run``."""
    if table not in TABLES:
        raise ValueError(f"table must be one of {', '.join(TABLES)}, got {table!r}")
    pa = _require("pyarrow")
    import pyarrow.parquet as pq

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    parts = []
    for source in paths:
        if os.fspath(source).endswith(".json"):
            from .report import load_report
            found = list(load_report(source).runs())
            stem = Path(os.fspath(source)).stem
            for s, r, _, trace in found:
                run = stem if len(found) == 1 else f"{stem}.{s + 1}.{r + 1}"
                parts.append(tables(trace, re.sub(r"[^A-Za-z0-9._=+-]", "_", run))[table])
        else:
            parts += [pq.read_table(f) for f in _files(source, table)]
    if not parts:
        raise ValueError("load_many needs at least one path")
    return pa.concat_tables(parts, promote_options="permissive").to_pandas()


def connect(source, memory_limit: str = "1GB", threads: int | None = None, temp_directory: str | None = None):
    """A DuckDB connection with views ``instances``, ``warps`` and ``launches`` over the
    dataset's files (nothing is loaded until a query reads it)."""
    duckdb = _require("duckdb")
    connection = duckdb.connect(config={"memory_limit": memory_limit,
                                        **({"threads": threads} if threads else {}),
                                        **({"temp_directory": temp_directory} if temp_directory else {})})
    connection.execute("SET enable_progress_bar = false")  # a query's result is the only output
    for table in TABLES:
        try:
            files = _files(source, table)
        except FileNotFoundError:
            if table == "instances":
                raise
            continue  # a bare instances file has no warps or launches beside it
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        connection.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}], union_by_name = true)")
    return connection


def query(source, sql: str, memory_limit: str = "1GB", threads: int | None = None,
          temp_directory: str | None = None) -> "pd.DataFrame":
    """Run ``sql`` over a dataset through DuckDB and return the result as a DataFrame.

    The views ``instances``, ``warps`` and ``launches`` name the dataset's tables, e.g.
    ``query("sweep/", "SELECT run, scope, median(duration_ns) FROM instances GROUP BY ALL")``.
    DuckDB reads only the columns and row groups the query needs and spills to disk beyond
    ``memory_limit``, so the dataset may be larger than memory (the result must fit)."""
    connection = connect(source, memory_limit, threads, temp_directory)
    try:
        return connection.execute(sql).df()
    finally:
        connection.close()


def scope_quantiles_sql(quantiles=(0.5, 0.95)) -> str:
    """SQL for exact quantiles of each run's and scope's durations, within a memory bound.

    DuckDB's median() holds every value of a group in memory (it failed at a 4 GB limit
    on 213 M instances); durations are integer ns with few distinct values per scope, so
    counting each value and walking the cumulative counts gives the same exact answer (the
    smallest duration with at least q of the instances at or below it: numpy's
    ``method="inverted_cdf"``) from a table of a few thousand rows."""
    for q in quantiles:
        if not (isinstance(q, (int, float)) and 0 < q <= 1):
            raise ValueError(f"quantiles must be in (0, 1], got {q!r}")
    picks = ", ".join(f"min(duration_ns) FILTER (WHERE upto >= {float(q)!r} * total) AS p{round(q * 100):g}_ns"
                      for q in quantiles)
    return ("WITH counted AS (SELECT run, scope, duration_ns, count(*) AS n FROM instances GROUP BY ALL), "
            "walked AS (SELECT *, sum(n) OVER (PARTITION BY run, scope ORDER BY duration_ns) AS upto, "
            "sum(n) OVER (PARTITION BY run, scope) AS total FROM counted) "
            f"SELECT run, scope, any_value(total) AS count, {picks} FROM walked GROUP BY ALL ORDER BY ALL")

