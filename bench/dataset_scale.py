"""A Parquet dataset larger than memory, queried through DuckDB within a memory limit.

The real H200 fixtures (attention_4k_h200.json, matmul_cold_h200.json), each tiled 8x into
a launch of ~2.1 M scope instances (tiled_trace.py), are replicated as shifted launches:
launch k is the real launch with its index set to k and every time shifted by a few ns
(so no two launches compress to the same pages). Two runs of --launches/2 launches each:
100 launches and 213 M instances by default. The dataset is written with the same tables
as Trace.to_parquet (gwatch_nb.dataset.tables), then each query runs in a fresh process
under DuckDB's memory limit, and its wall time and peak resident memory are printed.

    python bench/dataset_scale.py [--launches 100] [--copies 8] [--memory-limit 1GB] [--dir D] [--keep] [--reuse]"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
FIXTURES = os.path.join(os.path.dirname(HERE), "tests", "fixtures")
from gwatch_nb.dataset import scope_quantiles_sql  # noqa: E402

RUNS = {"attention": "attention_4k_h200.json", "matmul": "matmul_cold_h200.json"}

QUERIES = {
    "count, mean, total per scope": "SELECT run, scope, count(*) AS n, avg(duration_ns) AS mean_ns, "
                                    "sum(duration_ns) AS total_ns FROM instances GROUP BY ALL ORDER BY ALL",
    "exact p50, p95 per scope": scope_quantiles_sql(),
    "per-launch span": "SELECT run, launch, max(end_ns) AS last_end_ns FROM instances GROUP BY ALL ORDER BY ALL",
    "busy per SM": "SELECT run, sm, sum(duration_ns) FILTER (WHERE depth = 0) AS busy_ns FROM instances "
                   "GROUP BY ALL ORDER BY ALL",
    "slowest 10": "SELECT run, launch, block_x, block_y, warp, scope, duration_ns FROM instances "
                  "ORDER BY duration_ns DESC LIMIT 10",
    "join launches": "SELECT i.run, count(*) AS n, max(l.duration_ns) AS longest FROM instances i "
                     "JOIN launches l USING (run, launch) GROUP BY ALL",
}

# Runs in a fresh process: one query, then its wall time, peak resident memory (and that of
# the imports alone, before the query) and result size as JSON. The peak is the process's
# VmHWM: ru_maxrss would carry over the parent's peak across fork and exec.
_ONE_QUERY = """
import json, sys, time
import gwatch_nb, gwatch_nb.dataset, duckdb, pyarrow, pandas

def peak_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024

before = peak_mib()
began = time.perf_counter()
result = gwatch_nb.query(sys.argv[1], sys.argv[2], memory_limit=sys.argv[3], temp_directory=sys.argv[4])
print(json.dumps({"seconds": time.perf_counter() - began, "rows": len(result), "peak_rss_mb": peak_mib(),
                  "import_rss_mb": before}))
"""


def build(directory: str, launches: int, copies: int) -> tuple[int, float]:
    """Write the dataset; returns (instances written, seconds)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import gwatch_nb
    from gwatch_nb.dataset import tables
    from tiled_trace import tile

    began, written = time.perf_counter(), 0
    per_run = max(1, launches // len(RUNS))
    for run, fixture in RUNS.items():
        base = tables(tile(gwatch_nb.load(os.path.join(FIXTURES, fixture)), copies), run)
        writers = {}
        for name in base:
            os.makedirs(os.path.join(directory, name), exist_ok=True)
            writers[name] = pq.ParquetWriter(os.path.join(directory, name, f"{run}.parquet"), base[name].schema,
                                             compression="zstd")
        for k in range(per_run):
            shift = (k * 131) % 997
            for name, table in base.items():
                table = table.set_column(table.schema.get_field_index("launch"), "launch",
                                         pa.array([k] * len(table), table.schema.field("launch").type))
                for column in ("start_ns", "end_ns", "t0_ns"):
                    if column in table.column_names:
                        index = table.schema.get_field_index(column)
                        table = table.set_column(index, column, pc.add(table[column], shift))
                writers[name].write_table(table, row_group_size=1 << 20)
            written += len(base["instances"])
        for writer in writers.values():
            writer.close()
    return written, time.perf_counter() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=100)
    parser.add_argument("--copies", type=int, default=8, help="tiles per launch (8: ~2.1 M instances)")
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--dir", help="where to write the dataset (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the dataset afterwards")
    parser.add_argument("--reuse", action="store_true", help="query the dataset already in --dir (kept with --keep)")
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="gwatch-dataset-")
    spill = tempfile.mkdtemp(prefix="gwatch-spill-")
    try:
        if args.reuse:
            import gwatch_nb
            counts = gwatch_nb.query(directory, "SELECT count(*) AS n, count(DISTINCT (run, launch)) AS launches "
                                                "FROM instances")
            instances, launches, written = int(counts["n"][0]), int(counts["launches"][0]), "reused"
        else:
            (instances, seconds), launches = build(directory, args.launches, args.copies), args.launches
            written = f"written in {seconds:.0f} s"
        size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(directory) for f in files)
        print(f"dataset: {launches} launches, {instances:,} scope instances, {size / 2**30:.2f} GiB on disk, {written}")
        print(f"queries through DuckDB, memory_limit={args.memory_limit}, {os.cpu_count()} cores:")
        for title, sql in QUERIES.items():
            done = subprocess.run([sys.executable, "-c", _ONE_QUERY, directory, sql, args.memory_limit, spill],
                                  capture_output=True, text=True)
            if done.returncode:
                lines = done.stderr.strip().splitlines()
                print(f"  {title}: failed: {next((l for l in lines if 'Error' in l), lines[-1])}")
                continue
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"  {title}: {figures['seconds']:.1f} s, peak RSS {figures['peak_rss_mb']:.0f} MiB "
                  f"({figures['peak_rss_mb'] - figures['import_rss_mb']:+.0f} MiB over the imports), {figures['rows']} rows")
    finally:
        shutil.rmtree(spill, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
