"""Host-side costs on this machine, no GPU needed: decoding a 2-million-event launch into
Trace.df (warps with equal and with uneven event counts), the archive of 2 million scope instances, and rewriting a 50,000-line PTX.

The launch is a real H200 trace (tests/fixtures/attention_4k_h200.json) tiled into one
launch of 2,097,152 events, turned back into the exact bytes the GPU would have left in
its trace buffer, so the timed decode starts where the session's collection ends.
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


def device_buffers(launch: records.LaunchRecords):
    """The (headers, events) arrays the session copies back for this launch."""
    warps = launch.warps
    count = warps["n_events"].astype(np.int64)
    width = int(count.max())
    headers = np.zeros(len(warps), layout.SLOT_HEADER_DTYPE)
    for name in ("gt_entry", "ck_entry", "gt_exit", "ck_exit", "warp", "block_x", "block_y", "block_z", "sm"):
        headers[name] = warps[name]
    headers["magic"] = layout.WARP_MAGIC
    headers["events"] = count
    events = np.zeros((len(warps), width), layout.EVENT_DTYPE)
    keep = np.arange(width) < count[:, None]
    events["clock"][keep] = (launch.cycles & 0xFFFFFFFF).astype(np.uint32)
    events["tag"][keep] = launch.tags
    return headers.view(np.uint8).reshape(len(warps), -1), events


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def big_ptx(lines_wanted: int) -> str:
    """A module of many marked entries: the attention kernel's PTX, entry renamed per copy."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from compile_kernels import compile_ptx
    from corpus import CASES
    case = next(c for c in CASES if c.name.startswith("attention fwd d64"))
    text = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    head, _, body = text.partition(".visible .entry")
    body = ".visible .entry" + body.split("\t.file")[0]
    copies = max(1, lines_wanted // body.count("\n"))
    return head + "".join(body.replace("attn_fwd", f"attn_fwd_{i}") for i in range(copies))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    base = gwatch_nb.load(FIXTURE)
    launch = tile(base, 4).records[0]
    headers, events = device_buffers(launch)
    print(f"launch: {len(launch.warps):,} warps, {launch.events_recorded:,} events")

    def decode(launch, headers, events, scope_names):
        warps, cycles, tags, _ = records.from_device(headers, events, int(events.shape[1]))
        trace = Trace([records.LaunchRecords(launch.kernel, launch.grid, launch.block, events.shape[1], warps,
                                             cycles, tags)], scope_names)
        return trace.df

    seconds, df = timed(lambda: decode(launch, headers, events, base.scope_names), args.repeat)
    print(f"decode buffers -> Trace.df ({len(df):,} rows): {seconds * 1e3:.0f} ms; "
          f"{df.memory_usage(deep=True).sum() / len(df):.1f} bytes/row")

    # Causal attention: warps record 16 to 128 events, so the decode gathers each slot's own count.
    causal = gwatch_nb.load(CAUSAL_FIXTURE)
    uneven = tile(causal, -(-2_000_000 // causal.records[0].events_recorded)).records[0]
    uneven_headers, uneven_events = device_buffers(uneven)
    seconds, df = timed(lambda: decode(uneven, uneven_headers, uneven_events, causal.scope_names), args.repeat)
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

    text = big_ptx(50_000)
    seconds, result = timed(lambda: ptx.instrument(text), args.repeat)
    print(f"rewrite {text.count(chr(10)):,}-line PTX ({len(result.entries)} entries, {len(result.sites)} sites): "
          f"{seconds * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
