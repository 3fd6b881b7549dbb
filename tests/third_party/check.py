"""What the corpus's kernels give on this machine, case by case:
  python tests/third_party/check.py [NAME-REGEX] [--sass-only]
compiles each case's kernels for sm_90a (cpu_compile.py) and instruments them on the sass
tier (readings, pairs left out, counts that would differ), then traces the case on the
interpreter tier in a child process (scopes recorded, warnings). A one-line verdict each."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its warning
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.dirname(os.path.dirname(HERE))]

from third_party import cases  # noqa: E402


def sass_static(case) -> str:
    from third_party.cpu_compile import compile_case
    from gwatch_nb.cuda.sass_session import _miscounted, _ptx_scopes, compiled_away_scopes, ptx_lines_of
    from gwatch_nb.sass import markers
    from gwatch_nb.sass.callsites import CallSites
    from gwatch_nb.sass.instrument import instrument
    from gwatch_nb import sentinels
    from gwatch_nb.sources import from_compiled_kernel
    said = []
    compiled = compile_case(case)
    if not compiled:
        return f"no kernel named by {case.pattern!r} was launched"
    for fn, kernel in compiled:
        source = sentinels.ensure(from_compiled_kernel(kernel))  # the count check reads the sentinels, as a trace does
        try:
            made = instrument(source.cubin, kernel.name, markers.from_source(fn), shared_bytes=kernel.metadata.shared,
                              callsites=CallSites(fn), ptx=ptx_lines_of(source))
        except Exception as error:  # the verdict names it; the rest of the corpus still runs
            said.append(f"{kernel.name}: refused ({type(error).__name__}: {error})")
            continue
        if made is None:
            said.append(f"{kernel.name}: no site")
            continue
        away = compiled_away_scopes(source, made.left_out, _ptx_scopes(source))
        left = sorted({row["scope"] for row in made.left_out} - set(away))
        miscounted = _miscounted(source, made.start_depths, made.cost['placed_by'] == 'sentinels')
        said.append(f"{kernel.name}: {made.cost['readings']} readings (placed by {made.cost['placed_by']})"
                    + (f", left out {left}" if left else "")
                    + (f", compiled away {away}" if away else "")
                    + (f", {miscounted}" if miscounted else "")
                    + (f", at most {made.most_events} events a warp" if made.most_events is not None else ""))
    return "; ".join(said)


CHILD = """
import json, sys, warnings
sys.path[:0] = {path!r}
from third_party import cases
from gwatch_nb import do_trace
case = next(c for c in cases() if c.name == {name!r})
launch = case.launcher("cpu")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    trace = do_trace(launch, case.pattern, scope_name_map=case.scopes, instrumentation_tier="interpreter")
print(json.dumps(dict(recorded=sorted(int(s) for s in trace.df.scope_id.unique()),
                      warnings=sorted({{w.kind for w in trace.warnings}}), instances=len(trace.df))))
"""


def interpreted(case) -> str:
    code = CHILD.format(path=sys.path[:2], name=case.name)
    env = dict(os.environ, TRITON_INTERPRET="1")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return "interpreter gave up after 600 s"
    if done.returncode != 0:
        return "interpreter failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    missing = sorted(set(case.scopes) - set(got["recorded"]))
    return (f"{got['instances']} instances" + (f", never recorded {missing}" if missing else "")
            + (f", warnings {got['warnings']}" if got["warnings"] else ""))


def main(argv: list[str]) -> None:
    pattern = next((a for a in argv if not a.startswith("--")), "")
    for case in cases():
        if re.search(pattern, case.name):
            said = f"{case.name}\n  sass: {sass_static(case)}"
            if "--sass-only" not in argv:
                said += f"\n  interpreter: {interpreted(case)}"
            print(said, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
