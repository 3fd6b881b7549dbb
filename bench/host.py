"""Host-side costs on this machine, no GPU needed: decoding a 2-million-event launch into
Trace.df (warps with equal and with uneven event counts), the archive of 2 million scope instances, and rewriting a 50,000-line PTX.

The launch is a real H200 trace (tests/fixtures/attention_4k_h200.json) tiled into one
launch of 2,097,152 events, turned back into the exact records the instrumented kernel
(its site table from the rewriter, here) would have left in its trace buffer, so the timed
decode starts where the session's collection ends.
Median of several runs.  python bench/host.py [--repeat 5]"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import gwatch_nb  # noqa: E402
from gwatch_nb import layout, ptx, records  # noqa: E402
from gwatch_nb.trace import Trace  # noqa: E402
from tiled_trace import tile  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "attention_4k_h200.json")
CAUSAL_FIXTURE = os.path.join(ROOT, "tests", "fixtures", "attention_causal_h200.json")


def attention_ptx() -> str:
    """The example attention kernel's PTX for sm_90 (head dim 64), compiled here."""
    sys.path.insert(0, ROOT)  # corpus imports `from examples import ...`
    from compile_kernels import compile_ptx
    from corpus import CASES
    case = next(c for c in CASES if c.name.startswith("attention fwd d64"))
    return compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)


def device_buffers(launch: records.LaunchRecords, table: records.SiteTable):
    """The (headers, records) arrays the session copies back for this launch, had the
    instrumented kernel whose site table is ``table`` recorded its events: each warp's
    events are cut into that kernel's records, matching their scopes in order."""
    starts = [(site, table.tags[site:site + n].tolist())
              for site, n in enumerate(table.record_events.tolist()) if n]
    warps = launch.warps
    count = warps["n_events"].astype(np.int64)
    tags, clocks = launch.tags.tolist(), (launch.cycles & 0xFFFFFFFF).astype(np.uint32)
    per_warp, position = [], 0
    for n in count.tolist():
        warp_records, end = [], position + n
        while position < end:
            site, covered = next((site, want) for site, want in starts if tags[position:position + len(want)] == want)
            readings = {}
            for k in range(len(covered)):
                readings.setdefault(int(table.readings[site + k]), clocks[position + k])
            warp_records.append(([readings.get(r, readings[0]) for r in range(layout.READINGS_PER_RECORD)], site))
            position += len(covered)
        per_warp.append(warp_records)
    width = max(len(r) for r in per_warp)
    headers = np.zeros(len(warps), layout.SLOT_HEADER_DTYPE)
    for name in ("gt_entry", "ck_entry", "gt_exit", "ck_exit", "warp", "block_x", "block_y", "block_z", "sm"):
        headers[name] = warps[name]
    headers["magic"] = layout.WARP_MAGIC
    headers["events"] = count
    headers["records"] = [len(r) for r in per_warp]
    recs = np.zeros((len(warps), width), layout.RECORD_DTYPE)
    for i, warp_records in enumerate(per_warp):
        recs[i, :len(warp_records)] = warp_records
    return headers.view(np.uint8).reshape(len(warps), -1), recs


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def big_ptx(text: str, lines_wanted: int) -> str:
    """A module of many marked entries: a kernel's PTX, entry renamed per copy."""
    head, _, body = text.partition(".visible .entry")
    body = ".visible .entry" + body.split("\t.file")[0]
    copies = max(1, lines_wanted // body.count("\n"))
    return head + "".join(body.replace("attn_fwd", f"attn_fwd_{i}") for i in range(copies))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    source = attention_ptx()
    table = records.SiteTable.of_entry(ptx.instrument(source).sites, "attn_fwd")
    base = gwatch_nb.load(FIXTURE)
    launch = tile(base, 4).records[0]
    headers, recs = device_buffers(launch, table)
    print(f"launch: {len(launch.warps):,} warps, {launch.events_recorded:,} events, {recs.size:,} records")
    capacity = int(launch.warps["n_events"].max())

    def decode(launch, headers, recs, scope_names):
        warps, cycles, tags, _ = records.from_device(headers, recs, capacity, table)
        trace = Trace([records.LaunchRecords(launch.kernel, launch.grid, launch.block, capacity, warps,
                                             cycles, tags)], scope_names)
        return trace.df

    seconds, df = timed(lambda: decode(launch, headers, recs, base.scope_names), args.repeat)
    print(f"decode buffers -> Trace.df ({len(df):,} rows): {seconds * 1e3:.0f} ms; "
          f"{df.memory_usage(deep=True).sum() / len(df):.1f} bytes/row")

    # Causal attention: warps record 16 to 128 events, so the decode gathers each slot's own count.
    causal = gwatch_nb.load(CAUSAL_FIXTURE)
    uneven = tile(causal, -(-2_000_000 // causal.records[0].events_recorded)).records[0]
    uneven_headers, uneven_recs = device_buffers(uneven, table)
    seconds, df = timed(lambda: decode(uneven, uneven_headers, uneven_recs, causal.scope_names), args.repeat)
    print(f"decode buffers with uneven counts ({uneven.events_recorded:,} events, {len(df):,} rows): "
          f"{seconds * 1e3:.0f} ms")

    big = tile(base, 8)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "big.json")
        seconds, _ = timed(lambda: big.save(path), max(1, args.repeat // 2))
        size = os.path.getsize(path)
        print(f"save {len(big.df):,} instances: {seconds * 1e3:.0f} ms, {size / 1e6:.1f} MB "
              f"({size / len(big.df):.1f} bytes/instance)")
        seconds, _ = timed(lambda: gwatch_nb.load(path).df, args.repeat)
        print(f"load archive -> Trace.df: {seconds * 1e3:.0f} ms")

    text = big_ptx(source, 50_000)
    seconds, result = timed(lambda: ptx.instrument(text), args.repeat)
    print(f"rewrite {text.count(chr(10)):,}-line PTX ({len(result.entries)} entries, {len(result.sites)} sites): "
          f"{seconds * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
