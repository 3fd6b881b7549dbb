"""gwatch_nb.load(...).df of one archive, this tree against another, on a shared machine.

Each tree is timed in its own processes, the two alternating round by round so both see the
same neighbours; wall and CPU time (process_time: what the load itself spent) are reported
as medians with their interquartile range. The other tree is a copy of an older gwatch_nb,
e.g. ``git archive <commit> gwatch_nb | tar -x -C /tmp/old`` with the built _native copied in.

    python bench/load.py [--against /tmp/old] [--archive tests/fixtures/matmul_cold_h200.json] [--rounds 8]"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import gwatch_nb
gwatch_nb.load(sys.argv[2]).df  # imports and first-use caches are not loading
times = []
for _ in range(5):
    wall, cpu = time.perf_counter(), time.process_time()
    instances = len(gwatch_nb.load(sys.argv[2]).df)
    times.append((time.perf_counter() - wall, time.process_time() - cpu))
print(json.dumps({"instances": instances, "times": times}))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="the directory holding another gwatch_nb package")
    parser.add_argument("--archive", default=os.path.join(ROOT, "tests", "fixtures", "matmul_cold_h200.json"))
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    trees = {"this tree": ROOT, **({"against": os.path.abspath(args.against)} if args.against else {})}
    runs = {name: [] for name in trees}
    instances = 0
    for r in range(args.rounds):
        for name in (list(trees) if r % 2 == 0 else list(reversed(trees))):
            out = subprocess.run([sys.executable, "-c", CHILD, trees[name], os.path.abspath(args.archive)],
                                 capture_output=True, text=True, check=True, cwd="/")
            result = json.loads(out.stdout)
            instances = result["instances"]
            runs[name] += result["times"]
    for name, times in runs.items():
        for kind, column in (("wall", 0), ("cpu", 1)):
            ms = sorted(t[column] * 1e3 for t in times)
            low, _, high = statistics.quantiles(ms, n=4)
            median = statistics.median(ms)
            print(f"{name:10s} {kind}: median {median:.1f} ms (IQR {low:.1f}-{high:.1f}, n={len(ms)}) "
                  f"= {instances / median / 1e3:.2f} M instances/s")


if __name__ == "__main__":
    main()
