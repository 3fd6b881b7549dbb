"""Plain vs markers-compiled vs traced kernel time for the example matmul and attention.

Kernel time is measured with CUDA events recorded right around each launch (for traced
launches, by the session, after its buffer setup), median of many launches over rotated
inputs. Prints one table.  python bench/engine_timing.py [--iters N]"""
import argparse
import os
import statistics
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
sys.path.insert(0, HERE)

import attention  # noqa: E402
import matmul  # noqa: E402
from variants import without_markers  # noqa: E402
from gwatch_nb import GwatchWarning, do_trace  # noqa: E402


def event_times(call, inputs, iters):
    for i in range(3):
        call(*inputs[i % len(inputs)])
    times = []
    for i in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(*inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def traced_times(call, inputs, iters, pattern, capacity):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GwatchWarning)
        trace = do_trace(lambda: [call(*inputs[i % len(inputs)]) for i in range(iters)], pattern,
                         capacity=capacity)
    return [r.info["kernel_ms"] for r in trace.records], trace


def describe(times):
    q = statistics.quantiles(times, n=10)
    return statistics.median(times) * 1e3, q[0] * 1e3, q[-1] * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=40)
    args = parser.parse_args()
    mm_plain, attn_plain = without_markers("matmul"), without_markers("attention")
    torch.manual_seed(0)
    mm_inputs = [(torch.randn(4096, 4096, device="cuda", dtype=torch.float16),
                  torch.randn(4096, 4096, device="cuda", dtype=torch.float16)) for _ in range(3)]
    at_inputs = [tuple(torch.randn(4, 16, 4096, 64, device="cuda", dtype=torch.float16) for _ in range(3))
                 for _ in range(3)]
    cases = [
        ("matmul 4096^3 fp16", mm_plain.matmul, matmul.matmul, mm_inputs, r"matmul_kernel",
         matmul.events_per_warp(4096)),
        ("attention fwd Z4 H16 N4096 d64", attn_plain.attention, attention.attention, at_inputs, r"attn_fwd",
         attention.events_per_warp(4096)),
    ]
    print(f"{'kernel':34} {'variant':16} {'median us':>10} {'p10':>9} {'p90':>9} {'vs plain':>9}")
    for label, plain, marked, inputs, pattern, per_warp in cases:
        same = torch.equal(plain(*inputs[0]), marked(*inputs[0]))
        base = describe(event_times(plain, inputs, args.iters))
        rows = [("plain", base), ("markers, idle", describe(event_times(marked, inputs, args.iters)))]
        traced, trace = traced_times(marked, inputs, args.iters, pattern, per_warp)
        rows.append(("traced", describe(traced)))
        for variant, (median, p10, p90) in rows:
            print(f"{label:34} {variant:16} {median:10.1f} {p10:9.1f} {p90:9.1f} {100 * (median / base[0] - 1):+8.1f}%")
        info = trace.records[0].info
        print(f"    plain==marked output: {same}; events/launch {trace.records[0].events_recorded}, dropped "
              f"{trace.events_dropped}; instrumented regs {info['instrumented_registers']}; host callback "
              f"{statistics.median(r.info['host_callback_us'] for r in trace.records):.0f} us/launch; "
              f"first instrument {info['instrument_seconds'] * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
