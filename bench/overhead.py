"""Kernel time with and without tracing, side by side with Triton's Proton.

For each kernel: plain (markers removed), markers compiled in but no trace active,
traced by gwatch-nb, and traced by Proton's instrumentation backend with the same
scopes. Kernel time is the GPU's own start-to-end of each kernel, from CUPTI's activity
records (gwatch_nb/cuda/activity.py), for plain, idle and traced launches alike, so nothing
the host does around a launch enters it. Proton holds CUPTI in its process, so its launches
are timed with CUDA events by Triton launch hooks that run before Proton's own (Proton
drains its buffer after every launch), a sleep kernel queued first keeping the GPU busy
while the host launches. Inputs rotate over three sets so caches
do not flatter, and plain/idle/traced are measured in interleaved rounds so clock drift
hits them alike. Proton runs in its own process: it takes CUPTI's only subscriber slot.
With --scopes, a case is also traced with only some of its scopes (variant
"gwatch[101+103]"), in the same rounds: what fewer traced scopes cost.

    python bench/overhead.py [--cases all|matmul-4096,...] [--proton CASES] [--diagnose CASES]
                             [--scopes CASE:ID+ID,...] [--out DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # for `from examples import ...`
sys.path.insert(0, HERE)

from diagnostics import DIAGNOSTIC_EDITS  # noqa: E402
from gpu_times import kernel_times  # noqa: E402


def _cases():
    import torch

    from examples import attention
    from examples import matmul
    from examples import softmax

    def randn(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.float16)

    cases = {
        "matmul-4096": dict(module="matmul", scopes=matmul.SCOPES, pattern=r"matmul_kernel",
                            inputs=lambda: (randn(4096, 4096), randn(4096, 4096)),
                            call=lambda m, a, b: m.matmul(a, b), capacity=matmul.events_per_warp(4096)),
        "softmax-32768x4096": dict(module="softmax", scopes=softmax.SCOPES, pattern=r"softmax_kernel",
                                   inputs=lambda: (randn(32768, 4096),),
                                   call=lambda m, x: m.softmax(x), capacity=6 * (32768 // (4 * 132) + 1)),
    }
    for n_ctx, batch in ((4096, 4), (16384, 1)):
        for head_dim in (64, 128):
            for causal in (False, True):
                name = f"attn-n{n_ctx}-d{head_dim}{'-causal' if causal else ''}"
                cases[name] = dict(
                    module="attention", scopes=attention.SCOPES, pattern=r"attn_fwd",
                    inputs=lambda b=batch, n=n_ctx, d=head_dim: tuple(randn(b, 16, n, d) for _ in range(3)),
                    call=lambda m, q, k, v, c=causal: m.attention(q, k, v, causal=c),
                    capacity=attention.events_per_warp(n_ctx))
    return cases


#: GPU cycles of the sleep queued before each Proton-timed launch (~50 µs at 2 GHz).
SLEEP_CYCLES = 100_000


def _kernel_times(call, inputs, iters, pattern):
    return kernel_times(lambda: [call(*inputs[i % len(inputs)]) for i in range(iters)], pattern)


class _HookTimer:
    """Events recorded by Triton's launch hooks, right before and after each kernel."""

    def __init__(self):
        import torch
        self.torch = torch
        self.pairs = []

    def enter(self, metadata):
        self.pairs.append([self.torch.cuda.Event(enable_timing=True), None])
        self.pairs[-1][0].record()

    def exit(self, metadata):
        self.pairs[-1][1] = self.torch.cuda.Event(enable_timing=True)
        self.pairs[-1][1].record()

    def times(self):
        self.torch.cuda.synchronize()
        return [start.elapsed_time(end) * 1e3 for start, end in self.pairs]


def _traced(call, inputs, iters, pattern, capacity, scopes=None, tier="ptx", auto=False):
    from gwatch_nb import tiers
    from gwatch_nb.options import TraceOptions
    session = tiers.open_session(TraceOptions(pattern, tier, capacity, scopes=scopes, auto=auto))
    session.start()
    try:
        for i in range(iters):
            call(*inputs[i % len(inputs)])
    finally:
        began = time.perf_counter()
        session.stop()
        collect_s = time.perf_counter() - began
    records = session.records()
    if not records:
        raise RuntimeError("; ".join(p.message for p in session.problems()) or "nothing was traced")
    return {
        "times": [r.info["kernel_ms"] * 1e3 for r in records],
        "events": records[0].events_recorded, "dropped": records[0].events_dropped,
        "bytes": records[0].info["trace_bytes"],
        "host_us": statistics.median(r.info["host_callback_us"] for r in records),
        "first_host_ms": records[0].info["host_callback_us"] / 1e3,
        "collect_ms": collect_s * 1e3 / len(records),
        "registers": records[0].info["instrumented_registers"],
    }


def _scope_subsets(text: str) -> dict[str, list[frozenset]]:
    """'matmul-4096:101,attn-n4096-d128:101+103' -> {case: [scope ids traced, ...]}."""
    subsets = {}
    for item in filter(None, text.split(",")):
        case, _, ids = item.partition(":")
        subsets.setdefault(case, []).append(frozenset(int(i) for i in ids.split("+")))
    return subsets


def _subset_label(scopes: frozenset) -> str:
    return "gwatch[" + "+".join(map(str, sorted(scopes))) + "]"


def worker_gwatch(names, rounds, iters, subsets):
    import torch
    from variants import without_markers
    import importlib
    cases = _cases()
    for name in names:
        began = time.perf_counter()
        case = cases[name]
        marked = importlib.import_module("examples." + case["module"])
        plain = without_markers(case["module"])
        inputs = [case["inputs"]() for _ in range(3)]
        plain_call = lambda *a: case["call"](plain, *a)  # noqa: E731
        marked_call = lambda *a: case["call"](marked, *a)  # noqa: E731
        same = torch.equal(plain_call(*inputs[0]), marked_call(*inputs[0]))
        _kernel_times(plain_call, inputs, 3, case["pattern"])
        _kernel_times(marked_call, inputs, 3, case["pattern"])
        # gwatch-nb with every scope traced (ptx tier, sass tier, and the sass tier's automatic
        # sites on the kernel without markers), then with each subset of them asked for.
        traced_variants = {"gwatch": (marked_call, None, "ptx", False), "sass": (marked_call, None, "sass", False),
                           "sass-auto": (plain_call, None, "sass", True),
                           **{_subset_label(s): (marked_call, s, "ptx", False) for s in subsets.get(name, [])}}
        samples = {"plain": [], "idle": [], **{label: [] for label in traced_variants}}
        figures = {}  # each traced variant's figures from its last round
        # Host time of each round's first traced launch: instrumenting it, then reusing it.
        first_launch_ms = {label: [] for label in traced_variants}
        for _ in range(rounds):
            samples["plain"] += _kernel_times(plain_call, inputs, iters, case["pattern"])
            samples["idle"] += _kernel_times(marked_call, inputs, iters, case["pattern"])
            for label, (call, scopes, tier, auto) in traced_variants.items():
                if label not in samples:  # it failed in an earlier round
                    continue
                try:
                    figures[label] = _traced(call, inputs, max(4, iters // 2), case["pattern"],
                                             case["capacity"] * (6 if auto else 2 if tier == "sass" else 1),
                                             scopes, tier, auto)
                except Exception as error:  # a variant that cannot trace this case is reported, not fatal
                    print(json.dumps({"case": name, "variant": label, "error": f"{type(error).__name__}: {error}"}),
                          flush=True)
                    figures.pop(label, None)
                    samples.pop(label, None)
                    continue
                samples[label] += figures[label].pop("times")
                first_launch_ms[label].append(figures[label].pop("first_host_ms"))
        print(f"{name}: measured in {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
        for variant, times in list(samples.items()):
            row = {"case": name, "variant": variant, "times": times, "same_output": same}
            if variant in figures:
                first = first_launch_ms[variant]
                row.update(figures[variant], instrument_ms=first[0], again_ms=statistics.median(first[1:] or first))
            print(json.dumps(row), flush=True)


def worker_diagnose(names, rounds, iters):
    """Time traced launches of the instrumented PTX with each diagnostic edit applied, and
    as built ("as-built", the edits' reference from the same process), in interleaved
    rounds so drift hits them alike."""
    import dataclasses
    import importlib
    from gwatch_nb.cuda import instrumented
    cases = _cases()
    original = instrumented.ptx_rewrite.instrument
    variants = {"as-built": lambda ptx: ptx, **DIAGNOSTIC_EDITS}
    for name in names:
        case = cases[name]
        marked = importlib.import_module("examples." + case["module"])
        inputs = [case["inputs"]() for _ in range(3)]
        call = lambda *a: case["call"](marked, *a)  # noqa: E731
        times, registers = {label: [] for label in variants}, {}
        for _ in range(rounds):
            for label, edit in variants.items():
                def edited(ptx, scopes=None, edit=edit):
                    result = original(ptx, scopes)
                    return dataclasses.replace(result, ptx=edit(result.ptx))
                instrumented.ptx_rewrite.instrument = edited
                instrumented._by_ptx.clear()
                try:
                    traced = _traced(call, inputs, -(-iters // rounds), case["pattern"], case["capacity"])
                finally:
                    instrumented.ptx_rewrite.instrument = original
                    instrumented._by_ptx.clear()
                times[label] += traced["times"]
                registers[label] = traced["registers"]
        for label in variants:
            print(json.dumps({"case": name, "variant": label, "times": times[label],
                              "registers": registers[label]}), flush=True)


def worker_proton(names, iters, out_dir):
    import importlib
    import torch
    import triton.profiler as proton
    import triton.profiler.language as pl
    from variants import with_proton_scopes
    pl.enable_semantic("triton")
    cases = _cases()
    for name in names:
        case = cases[name]
        module = with_proton_scopes(case["module"], case["scopes"])
        importlib.import_module("examples." + case["module"])
        inputs = [case["inputs"]() for _ in range(3)]
        call = lambda *a: case["call"](module, *a)  # noqa: E731
        path = os.path.join(out_dir, f"proton-{name}")
        row = {"case": name, "variant": "proton"}
        try:
            import triton
            proton.start(path, backend="instrumentation", data="trace")
            call(*inputs[0])  # compile with Proton's instrumentation on
            timer = _HookTimer()
            # Registered after Proton's: the enter hook runs after Proton's, the exit hook
            # (a reversed chain) before it, so the events bracket the kernel alone.
            triton.knobs.runtime.launch_enter_hook.add(timer.enter)
            triton.knobs.runtime.launch_exit_hook.add(timer.exit)
            began = time.perf_counter()
            for i in range(iters):
                torch.cuda._sleep(SLEEP_CYCLES)
                call(*inputs[i % len(inputs)])
            row["times"] = timer.times()
            row["host_ms_per_launch"] = (time.perf_counter() - began) * 1e3 / iters
            triton.knobs.runtime.launch_enter_hook.remove(timer.enter)
            triton.knobs.runtime.launch_exit_hook.remove(timer.exit)
            began = time.perf_counter()
            proton.finalize(output_format="chrome_trace")
            row["finalize_ms_per_launch"] = (time.perf_counter() - began) * 1e3 / (iters + 1)
            written = [os.path.join(out_dir, f) for f in os.listdir(out_dir) if f.startswith(f"proton-{name}")]
            row["bytes"] = sum(os.path.getsize(f) for f in written) // (iters + 1)
            for f in written:
                os.remove(f)
        except Exception as error:  # Proton may not support a kernel; say so in the table
            row["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
        torch.cuda.synchronize()
        print(json.dumps(row), flush=True)


def _summary(rows):
    base = {r["case"]: statistics.median(r["times"]) for r in rows if r["variant"] == "plain"}
    lines = [f"{'case':28} {'variant':17} {'median us':>10} {'p10':>9} {'p90':>9} {'overhead':>9} "
             f"{'events/launch':>14} {'dropped':>8} {'trace MB':>9} {'host/launch':>12} "
             f"{'instrument':>11} {'again':>8}"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['case']:28} {r['variant']:17} n/a: {r['error']}")
            continue
        times = sorted(r["times"])
        q = statistics.quantiles(times, n=10) if len(times) > 2 else [times[0], times[-1]]
        median = statistics.median(times)
        extra = ""
        if r["variant"].startswith(("gwatch", "sass")):
            extra = (f"{r['events']:>14} {r['dropped']:>8} {r['bytes'] / 1e6:>9.1f} "
                     f"{r['host_us'] / 1e3 + r['collect_ms']:>9.1f} ms "
                     f"{r['instrument_ms']:>8.1f} ms {r['again_ms']:>5.1f} ms")
        elif r["variant"] == "proton":
            host = r["host_ms_per_launch"] + r["finalize_ms_per_launch"]
            extra = f"{'':>14} {'':>8} {r['bytes'] / 1e6:>9.1f} {host:>9.1f} ms"
        lines.append(f"{r['case']:28} {r['variant']:17} {median:10.1f} {q[0]:9.1f} {q[-1]:9.1f} "
                     f"{100 * (median / base[r['case']] - 1):+8.1f}% {extra}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="all")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--out", default=".")
    parser.add_argument("--proton", default="all", help="cases also traced by Proton ('none' for none)")
    parser.add_argument("--diagnose", default="none",
                        help="cases also timed with each diagnostic edit of the instrumentation (DIAGNOSTIC_EDITS)")
    parser.add_argument("--scopes", default="",
                        help="cases also traced with only some scopes, e.g. matmul-4096:101,attn-n4096-d128:101+103")
    parser.add_argument("--worker", choices=["gwatch", "proton", "diagnose"])
    args = parser.parse_args()
    if args.worker:
        names = args.cases.split(",")
        if args.worker == "gwatch":
            worker_gwatch(names, args.rounds, args.iters, _scope_subsets(args.scopes))
        elif args.worker == "diagnose":
            worker_diagnose(names, args.rounds, args.iters)
        else:
            worker_proton(names, args.iters, args.out)
        return
    def chosen(option):
        return list(_case_names()) if option == "all" else [] if option == "none" else option.split(",")

    names = chosen(args.cases)
    os.makedirs(args.out, exist_ok=True)
    # An empty cubin cache, so the first traced launch of each case pays the whole instrumentation.
    os.environ["GWATCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="gwatch-bench-cache-")
    rows = []
    workers = [("gwatch", names), ("diagnose", chosen(args.diagnose)), ("proton", chosen(args.proton))]
    with open(os.path.join(args.out, "overhead.jsonl"), "w") as log:
        for worker, cases in workers:
            if not cases:
                continue
            # Proton writes every event of every launch as JSON: far fewer launches keep it to minutes.
            iters = args.iters if worker != "proton" else max(3, args.iters // 5)
            command = [sys.executable, __file__, "--worker", worker, "--cases", ",".join(cases), "--rounds",
                       str(args.rounds), "--iters", str(iters), "--out", args.out, "--scopes", args.scopes]
            # Rows are kept as they arrive, so a run cut short still leaves its numbers.
            with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
                for line in child.stdout:
                    if line.startswith("{"):
                        rows.append(json.loads(line))
                        log.write(line)
                        log.flush()
                        print(f"{worker}: {rows[-1]['case']} {rows[-1]['variant']} done", flush=True)
            if child.returncode:
                print(f"{worker} worker exited with status {child.returncode}", file=sys.stderr)
    order = {name: i for i, name in enumerate(["plain", "idle", "gwatch", "as-built", *DIAGNOSTIC_EDITS, "proton"])}
    rows.sort(key=lambda r: (names.index(r["case"]), order.get(r["variant"], order["gwatch"] + 0.5)))
    table = _summary(rows)
    print(table)
    with open(os.path.join(args.out, "overhead.json"), "w") as f:
        json.dump(rows, f)
    with open(os.path.join(args.out, "overhead.txt"), "w") as f:
        f.write(table + "\n")


def _case_names():
    yield "matmul-4096"
    yield "softmax-32768x4096"
    for n_ctx in (4096, 16384):
        for head_dim in (64, 128):
            for causal in ("", "-causal"):
                yield f"attn-n{n_ctx}-d{head_dim}{causal}"


if __name__ == "__main__":
    main()
