"""What tracing costs on kernels other people wrote: every case of the third-party corpus
(tests/third_party/), plain against traced, a line per kernel.

Per case, in interleaved rounds: the kernel with its marker lines taken out ("plain",
assemble.py's unmarked/ module), then traced with its markers on the sass tier and on the ptx
tier. Every figure is the GPU's own start-to-end of the kernel (CUPTI's activity records,
gwatch_nb/cuda/activity.py), the traced ones through the trace session, so nothing the host
does around a launch enters. The L2 cache is flushed before every launch, plain and traced
alike (as triton.testing.do_bench does): these kernels run on fixed inputs, which would
otherwise stay in L2 between plain launches while a traced launch's own buffer setup and
records push them out. Beside the times: the span of the traced warps' lives (first
entry to last exit, from the trace itself: what the kernel body took, launch and drain
excluded), the host time of the launch callback, and whether the outputs stayed identical.

Cases run one after another in one process (a kernel that faults ends the process; the run
goes on in a new one from the next case), after a first pass that compiles every case in
parallel processes sharing one Triton cache.

  python bench/corpus_overhead.py OUT [NAME-REGEX] [--rounds 5] [--iters 10] [--jobs 8] [--frame] [--budget]
  python bench/corpus_overhead.py --table OUT/corpus_overhead.jsonl   # the table of a run again
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT, HERE]

from gpu_times import kernel_times  # noqa: E402

#: What each traced column is: its TraceOptions beside the pattern. "sass frame" (with
#: --frame) traces only the whole-kernel scope 1 that the corpus marks: the warps' prologue
#: and epilogue and one pair, so the rest of "sass" is what the other readings cost; "small
#: buffer" the same with 16 events per warp (a trace buffer of kilobytes, not the default's
#: up to 256 MiB).
VARIANTS = {"sass": dict(tier="sass"), "ptx": dict(tier="ptx")}
FRAME = {"sass frame": dict(tier="sass", scopes=frozenset({1})),
         "small buffer": dict(tier="sass", scopes=frozenset({1}), capacity=16)}
#: With --budget: "sass budget" is "sass" with every slot sized by the memory budget alone, as
#: the tier sized them before it bounded the slots of warps whose readings sit on no cycle
#: (cuda/session.py's default_capacity), so the two columns show what that bound is worth.
BUDGET = {"sass budget": dict(tier="sass", budget_slots=True)}
L2_FLUSH_BYTES = 256 << 20  # beyond the H200's 50 MB L2


def _flushing(launch):
    """`launch`, after writing over a buffer larger than the L2 cache."""
    import torch
    cache = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")

    def flushed():
        cache.zero_()
        return launch()
    return flushed


def _traced(launch, iters: int, pattern: str, options: dict, expected) -> dict:
    from unittest import mock

    import torch
    from gwatch_nb import tiers
    from gwatch_nb.cuda import session as sessions
    from gwatch_nb.options import TraceOptions
    options = dict(options)
    budget_slots = options.pop("budget_slots", False)
    by_budget = sessions.default_capacity
    sizing = mock.patch.object(sessions, "default_capacity",
                               lambda slots, free, fewest, most=None: by_budget(slots, free, fewest)) \
        if budget_slots else contextlib.nullcontext()
    session = tiers.open_session(TraceOptions(pattern, **options))
    session.start()
    try:
        with sizing:
            for _ in range(iters):
                outputs = launch()
            torch.cuda.synchronize()
    finally:
        session.stop()
    records = [r for r in session.records() if "kernel_ms" in r.info]
    if not records:
        raise RuntimeError("; ".join(p.message for p in session.problems()) or "nothing was traced")
    lives = []
    for r in records:
        w = r.warps[r.warps["gt_exit"] != 0]
        lives.append((int(w["gt_exit"].max()) - int(w["gt_entry"].min())) / 1e3 if len(w) else float("nan"))
    return dict(times=[r.info["kernel_ms"] * 1e3 for r in records], lives=lives,
                host_us=[r.info["host_callback_us"] for r in records],
                tiers=sorted({r.info.get("tier", options["tier"]) for r in records}),
                same=all(torch.equal(a, b) for a, b in zip(outputs, expected)),
                problems=sorted({p.kind for p in session.problems()}))


def measure_case(name: str, rounds: int, iters: int, frame: bool = False, budget: bool = False) -> dict:
    """In this process: the case plain and traced on each tier (with `frame`, also with scope
    1 alone; with `budget`, also with slots sized by the budget alone), interleaved."""
    import warnings

    import torch
    from third_party import cases
    case = next(c for c in cases() if c.name == name)
    marked, plain = (_flushing(case.launcher("cuda", marked=m)) for m in (True, False))
    expected = [t.clone() for t in plain()]
    marked()
    torch.cuda.synchronize()
    variants = dict(VARIANTS, **(BUDGET if budget else {}), **(FRAME if frame and 1 in case.scopes else {}))
    row = dict(case=name, plain=[], **{variant: dict(times=[], lives=[], host_us=[]) for variant in variants})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(rounds):
            row["plain"] += kernel_times(lambda: [plain() for _ in range(iters)], case.pattern)
            for variant, options in variants.items():
                if "error" in row[variant]:
                    continue
                try:
                    got = _traced(marked, iters, case.pattern, options, expected)
                except Exception as error:  # a tier that cannot trace the case is reported, not fatal
                    row[variant] = dict(error=f"{type(error).__name__}: {str(error)[:200]}")
                    continue
                for key in ("times", "lives", "host_us"):
                    row[variant][key] += got[key]
                row[variant].update(tiers=got["tiers"], problems=got["problems"],
                                    same=row[variant].get("same", True) and (got["same"] or not case.exact))
    return row


def _worker(names: list[str], rounds: int, iters: int, frame: bool = False, budget: bool = False) -> None:
    for name in names:
        try:
            row = measure_case(name, rounds, iters, frame, budget)
        except Exception as error:
            row = dict(case=name, error=f"{type(error).__name__}: {str(error)[:200]}")
        print("ROW " + json.dumps(row), flush=True)


def _run_worker(names: list[str], rounds: int, iters: int, env: dict, log: str, frame: bool = False,
                budget: bool = False) -> list[dict]:
    """Every case of `names` measured in as few processes as faults allow; each row is also
    appended to `log` as it comes (a run cut short keeps what it measured)."""
    rows, left = [], list(names)
    while left:
        code = (f"import sys; sys.path[:0] = [{HERE!r}]; from corpus_overhead import _worker; "
                f"_worker({left!r}, {rounds}, {iters}, {frame!r}, {budget!r})")
        with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) as child:
            done = 0
            for line in child.stdout:
                if line.startswith("ROW "):
                    rows.append(json.loads(line[4:]))
                    done += 1
                    with open(log, "a") as f:
                        f.write(line[4:])
            why = (child.stderr.read().strip().splitlines() or [f"rc {child.wait()}"])[-1][:200]
        left = left[done:]
        if left:  # the process ended inside the next case
            rows.append(dict(case=left[0], error=f"the process ended: {why}"))
            left = left[1:]
    return rows


def _compile(name: str, env: dict) -> None:
    """Build the case's plain and marked kernels and the traced copies' caches (timing nothing)."""
    code = (f"import sys; sys.path[:0] = [{HERE!r}]; from corpus_overhead import measure_case; "
            f"measure_case({name!r}, 1, 1)")
    subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=600)


def _percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def table(rows: list[dict]) -> str:
    """The markdown table: per case the plain median and its p10-p90, then per tier the traced
    median against plain, the warp-life span against plain and the host callback."""
    columns = [v for v in {**VARIANTS, **BUDGET, **FRAME} if any(v in row for row in rows)]
    head = ["case", "plain µs", "p10–p90"] + [f"{t} {what}" for t in columns for what in ("cost", "life", "host µs")]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    costs = {t: [] for t in columns}
    for row in sorted(rows, key=lambda r: r["case"]):
        if "error" in row or not row.get("plain"):
            lines.append(f"| {row['case']} | {row.get('error', 'no plain launch timed')} |")
            continue
        base = statistics.median(row["plain"])
        spread = 100 * (_percentile(row["plain"], 0.9) - _percentile(row["plain"], 0.1)) / base
        cells = [row["case"], f"{base:.1f}", f"{spread:.1f}%"]
        for tier in columns:
            got = row.get(tier, dict(error="not traced"))
            if "error" in got or not got["times"]:
                cells += [got.get("error", "nothing timed")[:60], "", ""]
                continue
            cost = 100 * (statistics.median(got["times"]) / base - 1)
            costs[tier].append(cost)
            note = "" if got.get("same", True) else " (outputs differ)"
            note += " (ptx kernel)" if tier != "ptx" and got.get("tiers") == ["ptx"] else ""
            cells += [f"{cost:+.1f}%{note}", f"{100 * (statistics.median(got['lives']) / base - 1):+.1f}%",
                      f"{statistics.median(got['host_us']):.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    for tier in columns:
        if costs[tier]:
            c = sorted(costs[tier])
            lines.append(f"\n{tier}: {len(c)} kernels, median {statistics.median(c):+.1f}%, "
                         f"90th percentile {_percentile(c, 0.9):+.1f}%, within 2%: {sum(x <= 2 for x in c)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="a folder for the run's rows and table (with --table: a run's rows)")
    parser.add_argument("pattern", nargs="?", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=8, help="processes compiling the cases before timing")
    parser.add_argument("--table", action="store_true", help="print the table of the rows in OUT")
    parser.add_argument("--frame", action="store_true",
                        help="also trace each case with its whole-kernel scope 1 alone, with the default buffer and a small one")
    parser.add_argument("--budget", action="store_true",
                        help="also trace each case on the sass tier with every slot sized by the memory budget alone")
    args = parser.parse_args()
    if args.table:
        with open(args.out) as f:
            print(table([json.loads(line) for line in f]))
        return
    from third_party import cases
    names = [c.name for c in cases() if c.scopes and c.source and re.search(args.pattern, c.name)]
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton-cache-"),
               GWATCH_CACHE_DIR=tempfile.mkdtemp(prefix="gwatch-cache-"), PYTHONUNBUFFERED="1")
    began = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda n: _compile(n, env), names))
    print(f"compiled {len(names)} cases in {time.perf_counter() - began:.0f} s", flush=True)
    rows = _run_worker(names, args.rounds, args.iters, env, os.path.join(args.out, "corpus_overhead.jsonl"),
                       args.frame, args.budget)
    text = table(rows)
    with open(os.path.join(args.out, "corpus_overhead.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
