"""Trace the example kernels on a GPU and write archives for the CPU tests.

    python tests/make_gpu_fixtures.py OUT_DIR [--comparisons-only]

Besides one trace per example, two sets for comparisons: the same attention kernel at
BLOCK_N=64 and BLOCK_N=128 (five launches each, so kernel measures get an interval), and
a sweep of the configurations an autotuner of that kernel would try, one report section
per configuration (``gwatch diff attention_sweep_h200.json`` compares them all)."""
import argparse
import functools
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # for `from examples import ...`

from examples import attention  # noqa: E402
from examples import matmul  # noqa: E402
from gwatch_nb import GwatchWarning, do_trace  # noqa: E402
from gwatch_nb.report import Report  # noqa: E402

#: Launches traced per comparison fixture: enough units for an interval on kernel duration.
COMPARE_LAUNCHES = 5
#: (BLOCK_N, num_warps, num_stages) an autotuner of attn_fwd at head_dim 64 would try.
SWEEP = [(32, 4, 3), (64, 4, 3), (128, 4, 2), (64, 8, 3), (128, 8, 2)]


def _traced(fn, pattern, scopes, **options):
    fn()  # compile and load before the trace, as a notebook user would have
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GwatchWarning)
        return do_trace(fn, pattern, scope_name_map=scopes, **options)


def _repeated(fn, times):
    def run():
        for _ in range(times):
            fn()
    return run


def comparison_fixtures(out_dir: str) -> None:
    """attention_bn64_h200.json / attention_bn128_h200.json and attention_sweep_h200.json."""
    q, k, v = (torch.randn(1, 4, 2048, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    for block_n in (64, 128):
        fn = _repeated(functools.partial(attention.attention, q, k, v, block_n=block_n), COMPARE_LAUNCHES)
        trace = _traced(fn, r"attn_fwd", attention.SCOPES, launches=COMPARE_LAUNCHES)
        trace.save(os.path.join(out_dir, f"attention_bn{block_n}_h200.json"))
        print(f"attention_bn{block_n}_h200.json: {len(trace.launches)} launches, {len(trace.df)} instances")
    report = Report("attn_fwd configurations, (1, 4, 2048, 64) fp16")
    for block_n, num_warps, num_stages in SWEEP:
        fn = functools.partial(attention.attention, q, k, v, block_n=block_n, num_warps=num_warps,
                               num_stages=num_stages)
        trace = _traced(_repeated(fn, COMPARE_LAUNCHES), r"attn_fwd", attention.SCOPES, launches=COMPARE_LAUNCHES)
        report.add_section(f"BLOCK_N={block_n} num_warps={num_warps} num_stages={num_stages}").add_run(trace)
    path = report.render(os.path.join(out_dir, "attention_sweep_h200.json"))
    print(f"{os.path.basename(path)}: {len(SWEEP)} configurations, {os.path.getsize(path) / 1e6:.2f} MB")


def sass_fixtures(out_dir: str) -> None:
    """The sass tier's traces: attention_sass_h200.json (the example attention's markers, on the
    inputs attention_h200.json traced on the ptx tier, so the two tiers compare),
    attention_sass_auto_h200.json (its automatic sites as well) and vector_add_exit_sass_h200.json."""
    torch.manual_seed(0)
    torch.randn(1024, 1024, device="cuda", dtype=torch.float16)  # the draws main() makes before q, k, v
    torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    q, k, v = (torch.randn(1, 4, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    for name, auto in (("attention_sass_h200.json", False), ("attention_sass_auto_h200.json", True)):
        trace = _traced(lambda: attention.attention(q, k, v), r"attn_fwd", attention.SCOPES,
                        instrumentation_tier="sass", auto=auto)
        path = os.path.join(out_dir, name)
        trace.save(path)
        print(f"{name}: {len(trace.df)} instances, {trace.events_recorded} events, {trace.events_dropped} dropped, "
              f"{len(trace.sites)} readings, {os.path.getsize(path) / 1e6:.2f} MB")
    # vector_add_exit_sass_h200.json: a masked tail whose last warps ptxas lets exit before the
    # store scope's end reading: those instances end at the warp's exit.
    from corpus_kernels import basics
    workload = basics.vector_add_marked_workload("cuda")
    trace = _traced(workload.launch, r"^vector_add_marked$", basics.VECTOR_ADD_SCOPES, instrumentation_tier="sass")
    path = os.path.join(out_dir, "vector_add_exit_sass_h200.json")
    trace.save(path)
    print(f"vector_add_exit_sass_h200.json: {len(trace.df)} instances, open at exit "
          f"{trace.meta['sass']['vector_add_marked'].get('open_at_exit')}, warnings {[w.kind for w in trace.warnings]}")


def main(out_dir: str, comparisons_only: bool = False, sass_only: bool = False) -> None:
    os.makedirs(out_dir, exist_ok=True)
    if sass_only:
        sass_fixtures(out_dir)
        return
    torch.manual_seed(0)
    if comparisons_only:  # leave the other fixtures, whose exact figures tests check, as they are
        comparison_fixtures(out_dir)
        return
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    q, k, v = (torch.randn(1, 4, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    qc, kc, vc = (torch.randn(1, 2, 1024, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    ql, kl, vl = (torch.randn(2, 4, 4096, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    wide = torch.randn(4096, 1024, device="cuda", dtype=torch.float16)
    tall = torch.randn(1024, 4096, device="cuda", dtype=torch.float16)
    runs = {
        # First, while the GPU's clock is still ramping up from idle: the clock model's hard case.
        "matmul_cold_h200.json": (lambda: matmul.matmul(wide, tall), r"matmul_kernel", matmul.SCOPES, {}),
        "matmul_h200.json": (lambda: matmul.matmul(a, b), r"matmul_kernel", matmul.SCOPES, {}),
        "attention_h200.json": (lambda: attention.attention(q, k, v), r"attn_fwd", attention.SCOPES, {}),
        "attention_causal_h200.json": (lambda: attention.attention(qc, kc, vc, causal=True), r"attn_fwd",
                                       attention.SCOPES, {}),
        "attention_4k_h200.json": (lambda: attention.attention(ql, kl, vl), r"attn_fwd", attention.SCOPES, {}),
        "matmul_overflow_h200.json": (lambda: matmul.matmul(a, b), r"matmul_kernel", matmul.SCOPES,
                                      {"capacity": 16}),
    }
    for name, (fn, pattern, scopes, options) in runs.items():
        trace = _traced(fn, pattern, scopes, **options)
        path = os.path.join(out_dir, name)
        trace.save(path)
        print(f"{name}: {len(trace.df)} instances, {trace.events_recorded} events, "
              f"{trace.events_dropped} dropped, {os.path.getsize(path) / 1e6:.2f} MB")
    comparison_fixtures(out_dir)
    sass_fixtures(out_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--comparisons-only", action="store_true",
                        help="only the comparison fixtures (attention at two BLOCK_N, the configuration sweep)")
    parser.add_argument("--sass-only", action="store_true", help="only the sass tier's fixtures")
    arguments = parser.parse_args()
    main(arguments.out_dir, arguments.comparisons_only, arguments.sass_only)
