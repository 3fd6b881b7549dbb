"""Trace the example kernels on a GPU and write archives for the CPU tests.

    python tests/make_gpu_fixtures.py OUT_DIR
"""
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # for `from examples import ...`

from examples import attention  # noqa: E402
from examples import matmul  # noqa: E402
from gwatch_nb import GwatchWarning, do_trace  # noqa: E402


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
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
        fn()  # compile and load before the trace, as a notebook user would have
        torch.cuda.synchronize()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GwatchWarning)
            trace = do_trace(fn, pattern, scope_name_map=scopes, **options)
        path = os.path.join(out_dir, name)
        trace.save(path)
        print(f"{name}: {len(trace.df)} instances, {trace.events_recorded} events, "
              f"{trace.events_dropped} dropped, {os.path.getsize(path) / 1e6:.2f} MB")


if __name__ == "__main__":
    main(sys.argv[1])
