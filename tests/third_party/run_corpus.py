"""Trace every corpus case on every GPU tier and say, per case and tier, whether the trace is
right; keep each kernel's cubin and PTX for the CPU tests.

  python tests/third_party/run_corpus.py OUT [NAME-REGEX] [--jobs N]

Each case runs in a process of its own (a kernel that faults takes only its own case down),
twice: with its markers (tiers ptx, sass and auto), and with its marker lines taken out
(assemble.py's unmarked/: the sass tier's automatic sites only). OUT/<case>.json holds what each trace gave and its verdict;
OUT/cubins/ the cubins and PTX Triton built; OUT/results.json all the verdicts.

A tier's trace is clean when the traced outputs equal the untraced run's (bit for bit;
within 1% for cases whose float atomics vary), nothing was dropped or failed, no
`unclosed`, `end_without_start`, `nested_same_id` or `sites_left_out`, every scope the
ptx tier recorded is recorded, and (sass and auto) each warp's count of each scope equals
the ptx tier's."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.dirname(os.path.dirname(HERE))]

WRONG = {"unclosed", "end_without_start", "nested_same_id", "sites_left_out"}
KEY = ["launch", "block_x", "block_y", "block_z", "warp", "scope_id"]


def _same(got, expected, exact: bool) -> bool:
    import torch
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return False
    if exact or not got.is_floating_point():
        return torch.equal(got, expected)
    return torch.allclose(got.float(), expected.float(), rtol=1e-2, atol=1e-2)


def _counts(trace) -> dict:
    df = trace.df
    sizes = df.groupby(KEY[:-1] + ["scope_id"], observed=True).size()
    return {tuple(int(v) for v in k): int(n) for k, n in sizes.items()}


def _summary(trace, outputs_same: bool) -> dict:
    launches = trace.launches
    sass = trace.meta.get("sass") or {}
    return dict(
        outputs_same=outputs_same, instances=len(trace.df),
        recorded=sorted(int(s) for s in trace.df.scope_id.unique()),
        warnings={w.kind: str(w.message)[:300] for w in trace.warnings},
        dropped=int(launches.events_dropped.sum()) if len(launches) else 0,
        launches=len(launches), tiers=sorted(set(launches["tier"])) if "tier" in launches else [],
        left_out={kernel: [dict(scope=int(r["scope"]), reason=str(r["reason"])[:200]) for r in info["left_out"]]
                  for kernel, info in sass.items() if info.get("left_out")})


def _verdict(result: dict, ptx: dict | None, counts_differ: int | None, written: set) -> str:
    if "error" in result:
        return "error: " + result["error"].splitlines()[-1][:160]
    if not result["outputs_same"]:
        return "outputs differ"
    if result["launches"] == 0:
        return "nothing traced"
    wrong = sorted(WRONG & set(result["warnings"]))
    if result["dropped"]:
        wrong.append(f"{result['dropped']} dropped")
    if ptx is not None and "recorded" in ptx:
        # The ptx tier is held to the source; the others to what the ptx tier recorded.
        missing = sorted((written if ptx is result else set(ptx["recorded"])) - set(result["recorded"]))
        if missing:
            wrong.append(f"scopes never recorded {missing}")
    if counts_differ:
        wrong.append(f"counts differ on {counts_differ} keys")
    if wrong:
        return ", ".join(wrong)
    return "clean (ptx)" if result.get("tiers") == ["ptx"] and ptx is not result else "clean"


def run_case(name: str, markers: bool) -> dict:
    """In this process: the case untraced twice, then traced on each tier."""
    import warnings

    import torch
    from third_party import cases
    from gwatch_nb import do_trace
    case = next(c for c in cases() if c.name == name)
    launch = case.launcher("cuda", marked=markers)
    first = [t.clone() for t in launch()]
    again = [t.clone() for t in launch()]
    torch.cuda.synchronize()
    out = dict(name=name, deterministic=all(_same(a, b, case.exact) for a, b in zip(first, again)), tiers={})
    plans = [("ptx", {}), ("sass", {}), ("auto", {})] if markers and case.scopes else [("sass", dict(auto=True))]
    counts = {}
    for tier, options in plans:
        traced = {}
        began = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trace = do_trace(lambda: traced.setdefault("out", [t.clone() for t in launch()]), case.pattern,
                                 scope_name_map=case.scopes, instrumentation_tier=tier, **options)
            same = len(traced["out"]) == len(first) and all(
                _same(a, b, case.exact) for a, b in zip(traced["out"], first))
            result = _summary(trace, same)
            counts[tier] = _counts(trace)
        except Exception as error:  # the verdict names it; the other tiers still run
            result = dict(error=f"{type(error).__name__}: {error}\n" + traceback.format_exc()[-600:])
        result["seconds"] = round(time.perf_counter() - began, 2)
        out["tiers"][tier] = result
    if markers and case.source:
        out["markers"] = _markers(case)
    ptx = out["tiers"].get("ptx")
    for tier, result in out["tiers"].items():
        differ = None
        if markers and tier != "ptx" and tier in counts and "ptx" in counts:
            a, b = counts["ptx"], counts[tier]
            keys = [k for k in set(a) | set(b) if a.get(k) != b.get(k)]
            differ = len(keys)
            # Per scope: the keys that differ, and one (ptx count, this tier's) to tell how.
            result["differ_by_scope"] = {str(scope): [sum(1 for k in keys if k[-1] == scope),
                                                      next([a.get(k, 0), b.get(k, 0)] for k in keys if k[-1] == scope)]
                                         for scope in sorted({k[-1] for k in keys})}
        result["counts_differ"] = differ
        result["verdict"] = _verdict(result, ptx, differ, set(case.scopes) if markers else set())
    return out


def _markers(case) -> dict:
    """The markers of every kernel in the case's module, as the sass tier reads them from the
    source on this machine (the CPU tests have the cubins, not the source)."""
    from triton.runtime.jit import JITFunction
    from third_party import built_module
    from gwatch_nb.sass import markers
    module = built_module(case.source)
    return {fn.__name__: [[m.file, m.line, m.kind, m.scope_id, m.loops] for m in markers.from_source(fn)]
            for fn in vars(module).values() if isinstance(fn, JITFunction)}


def _child(name: str, markers: bool, out: str) -> dict:
    cache = tempfile.mkdtemp(prefix="triton-cache-")
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    code = (f"import json, sys; sys.path[:0] = {sys.path[:2]!r}; from third_party.run_corpus import run_case; "
            f"print('RESULT ' + json.dumps(run_case({name!r}, {markers!r})))")
    began = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        line = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
        result = json.loads(line[-1][7:]) if line else dict(
            name=name, crashed=f"rc {done.returncode}: " + (done.stderr.strip().splitlines() or ["?"])[-1][:300])
    except subprocess.TimeoutExpired:
        result = dict(name=name, crashed="timed out after 300 s")
    result["wall_s"] = round(time.perf_counter() - began, 1)
    if markers:
        folder = _keep_cubins(cache, name, os.path.join(out, "cubins"))
        with open(os.path.join(folder, "markers.json"), "w") as f:
            json.dump(result.pop("markers", {}), f)
    return result


def _keep_cubins(cache: str, name: str, into: str) -> str:
    folder = os.path.join(into, name.replace("/", "__"))
    os.makedirs(folder, exist_ok=True)
    for root, _, files in os.walk(cache):
        for f in files:
            if f.endswith((".cubin", ".ptx")):
                with open(os.path.join(root, f), "rb") as src, open(os.path.join(folder, f), "wb") as dst:
                    dst.write(src.read())
    return folder


def main(argv: list[str]) -> None:
    from third_party import cases
    out = argv[0]
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 4
    rest = [a for i, a in enumerate(argv[1:], 1) if a != "--jobs" and argv[i - 1] != "--jobs"]
    pattern = rest[0] if rest else ""
    names = [c.name for c in cases() if re.search(pattern, c.name)]
    os.makedirs(out, exist_ok=True)
    work = [(c.name, m) for c in cases() if c.name in names for m in ((True, False) if c.scopes else (False,))]
    results = {}
    with ThreadPoolExecutor(jobs) as pool:
        running = {pool.submit(_child, name, markers, out): (name, markers) for name, markers in work}
        for done in as_completed(running):
            name, markers = running[done]
            result = done.result()
            results.setdefault(name, {})["marked" if markers else "unmarked"] = result
            tiers = {t: r.get("verdict") for t, r in result.get("tiers", {}).items()}
            print(f"{name} {'marked' if markers else 'unmarked'}: {result.get('crashed') or tiers}", flush=True)
            with open(os.path.join(out, "results.json"), "w") as f:  # after each case: a cut-short run keeps its part
                json.dump(dict(sorted(results.items())), f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
