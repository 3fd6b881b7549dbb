"""What a SASS rewrite costs on the host, per corpus kernel and example: the decode (nvdisasm over
the cubin and reading its listing, done once per cubin and cached), and the rewrite itself with
that decode cached (insert, write the cubin, check it) less the decode its checks make of the
result. The plan: a NOP before every 7th instruction. Prints a markdown table.

    python bench/sass_rewrite.py [--rounds 3]
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "examples"), os.path.join(ROOT, "tests")]
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # compiled as the tests compile them

import sass_cubins  # noqa: E402
import sass_plans  # noqa: E402
from gwatch_nb.sass import disasm, rewrite  # noqa: E402
from gwatch_nb.sass.cubin import Cubin  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    decoding = []

    def timed_disassemble(cubin):
        began = time.perf_counter()
        result = disasm.disassemble(cubin)
        decoding.append(time.perf_counter() - began)
        return result
    rewrite.disassemble = timed_disassemble  # the checks' decode of each result, timed
    print("| kernel | instructions | inserted | cubin bytes | rewritten bytes | decode ms | rewrite ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, data in sass_cubins.cubins().items():
        (kernel,) = Cubin.parse(data).kernels
        began = time.perf_counter()
        rewrite.decoded(data)
        decode = time.perf_counter() - began
        plan = sass_plans.every_seventh(sass_plans.kernel(data, kernel))
        times = []
        for _ in range(args.rounds):
            decoding.clear()
            began = time.perf_counter()
            out = rewrite.rewrite(data, kernel, plan)
            times.append(time.perf_counter() - began - sum(decoding))
        print(f"| {name} | {len(rewrite.decoded(data)[kernel])} | {len(plan)} | {len(data):,} | {len(out):,} "
              f"| {decode * 1e3:.0f} | {statistics.median(times) * 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
