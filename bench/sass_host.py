"""What the SASS tier's machinery costs on the host, per corpus kernel and example: the decode
(nvdisasm over the cubin and reading its listing, done once per cubin and cached); the line
table; the analysis (control flow, liveness, scoreboards); the automatic sites; and the
rewrite itself with the decode cached (insert, write the cubin, prove it from its words). The
decode runs nvdisasm: the disk cache of decodes is a fresh folder. The rewrite's plan: a NOP
before every 7th instruction. Medians of --rounds; prints a markdown table.

    python bench/sass_host.py [--rounds 3]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]  # `from examples import ...`, the tests' helpers
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # compiled as the tests compile them
os.environ["GWATCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="gwatch-bench-cache-")  # every decode is nvdisasm's

import sass_cubins  # noqa: E402
import sass_plans  # noqa: E402
from gwatch_nb.sass import rewrite, waits  # noqa: E402
from gwatch_nb.sass.cfg import ControlFlowGraph  # noqa: E402
from gwatch_nb.sass.cubin import Cubin  # noqa: E402
from gwatch_nb.sass.lines import line_table  # noqa: E402
from gwatch_nb.sass.liveness import Liveness  # noqa: E402
from gwatch_nb.sass.scoreboards import Scoreboards  # noqa: E402


def median_ms(call, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| kernel | instructions | inserted | cubin bytes | rewritten bytes | decode ms | lines ms "
          "| analysis ms | automatic sites ms | rewrite ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, data in sass_cubins.cubins().items():
        (kernel,) = Cubin.parse(data).kernels
        began = time.perf_counter()
        rewrite.decoded(data)
        decode = time.perf_counter() - began
        instructions = rewrite.decoded(data)[kernel]
        registers = Cubin.parse(data).registers(kernel)
        lines_ms = median_ms(lambda: line_table(data), args.rounds)
        locations = line_table(data)[kernel]

        def analyse():
            cfg = ControlFlowGraph(instructions, kernel)
            Liveness(cfg, registers).free_registers(len(instructions) // 2)
            Scoreboards(cfg).idle(0, 0)
        analysis_ms = median_ms(analyse, args.rounds)
        sites_ms = median_ms(lambda: waits.find(instructions, locations, kernel), args.rounds)
        plan = sass_plans.every_seventh(sass_plans.kernel(data, kernel))
        rewrite_ms = median_ms(lambda: rewrite.rewrite(data, kernel, plan), args.rounds)
        out = rewrite.rewrite(data, kernel, plan)
        print(f"| {name} | {len(instructions)} | {len(plan)} | {len(data):,} | {len(out):,} | {decode * 1e3:.0f} "
              f"| {lines_ms:.1f} | {analysis_ms:.1f} | {sites_ms:.1f} | {rewrite_ms:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
