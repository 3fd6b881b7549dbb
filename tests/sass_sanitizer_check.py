"""Rewritten cubins under compute-sanitizer: each kernel's rewrite (NOPs at every 7th instruction
and at every block start) swapped in for Triton's own and run on its workload. Run on a GPU machine:

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python tests/sass_sanitizer_check.py
    compute-sanitizer --tool racecheck --error-exitcode 3 python tests/sass_sanitizer_check.py --quick

No CUPTI is involved (the swap sets the CompiledKernel's function), so the sanitizer can attach.
Exit status 0: every rewritten kernel's outputs equal the plain kernel's, bit for bit (the
sanitizer itself exits with 3 when it finds anything)."""
import argparse
import contextlib
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import sass_swap  # noqa: E402
from gwatch_nb.sass import rewrite  # noqa: E402

QUICK = ("matmul", "attention fwd d64", "fused softmax")  # racecheck is slow: kernels with shared memory


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)} (for racecheck)")
    args = parser.parse_args()
    failures = 0
    for case in sass_swap.CASES:
        if args.quick and case.name not in QUICK:
            continue
        workload = case.workload("cuda")
        plain, kernels = sass_swap.launched_kernels(case.fn, workload.launch)
        for plan in ("every 7th", "block starts"):
            with contextlib.ExitStack() as stack:
                for kernel in kernels:
                    cubin = kernel.asm["cubin"]
                    insertions = sass_swap.PLANS[plan](rewrite.decoded(cubin)[kernel.name])
                    stack.enter_context(sass_swap.swapped(kernel, rewrite.rewrite(cubin, kernel.name, insertions)))
                outputs = workload.launch()
                torch.cuda.synchronize()
            same = len(kernels) > 0 and all(torch.equal(a, b) for a, b in zip(outputs, plain))
            failures += not same
            print(f"{case.name}, {plan}: {len(kernels)} kernel(s) swapped, same output {same}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
