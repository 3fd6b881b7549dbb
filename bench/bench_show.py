"""`gwatch show` on a 2-million-instance archive: the real H200 attention trace tiled 8x
into one launch of 8,192 warps. Prints the whole command's wall time, best of --repeat.

    python bench/bench_show.py [--repeat 5] [-- extra gwatch show options]"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gwatch_nb  # noqa: E402
from tiled_trace import tile  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "attention_4k_h200.json")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("options", nargs="*", help="passed on to gwatch show (after --)")
    args = parser.parse_args()
    trace = tile(gwatch_nb.load(FIXTURE), 8)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "attention_2m.json")
        trace.save(path)
        times = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "gwatch_nb.cli", "show", path, "--width", "120",
                                   *args.options], capture_output=True, text=True)
            times.append(time.perf_counter() - began)
            if done.returncode:
                sys.exit(done.stderr)
    print(f"gwatch show {' '.join(args.options)}: {len(trace.df):,} scope instances, best {min(times):.2f} s, "
          f"median {sorted(times)[len(times) // 2]:.2f} s over {args.repeat} runs")


if __name__ == "__main__":
    main()
