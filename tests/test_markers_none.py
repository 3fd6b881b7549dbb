"""GWATCH_MARKERS=none: markers compile to nothing, so the kernel is the one it would be without
them, instruction for instruction, even where idle markers change Triton's code (the pipelined
persistent matmuls, tests/test_idle_markers.py); the sass tier still places their scopes, from
the kernel's Python source, on that kernel. Compiled in a child process (the mode is read at
import), whose Triton cache goes to a directory of its own."""
import json
import os
import subprocess
import sys

import pytest

from test_idle_markers import FLATTENED, PERSISTENT, _marked_and_plain_ptx, _sass_instructions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [FLATTENED, PERSISTENT[0]]

CHILD = """
import json, sys
from corpus import CASES
from compile_kernels import _compile, compile_ptx
from test_idle_markers import _sass_instructions
from gwatch_nb.sass import markers
from gwatch_nb.sass.instrument import instrument
import triton
out = {}
for case in CASES:
    if case.name not in sys.argv[1:]:
        continue
    ptx = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    signature = dict(case.signature, **{name: "constexpr" for name in case.constexprs})
    cubin = _compile(case.fn, tuple(signature.items()), tuple(case.constexprs.items()), case.num_warps,
                     case.num_stages).asm["cubin"]
    made = instrument(cubin, case.fn.__name__, markers.from_source(case.fn))
    out[case.name] = dict(sentinels="gwatch.scope_" in ptx, sass=_sass_instructions(ptx),
                          readings=len(made.sites["site"]), scopes=sorted(set(made.sites["scope"])),
                          cache=triton.knobs.cache.dir)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled_without_markers():
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("compiling needs Triton's compiler, which TRITON_INTERPRET=1 replaces")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env.update(GWATCH_MARKERS="none", PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests"),
                                                                  os.path.join(ROOT, "bench")]))
    child = subprocess.run([sys.executable, "-c", CHILD, *(c.name for c in CASES)], capture_output=True, text=True,
                           env=env, cwd=ROOT, timeout=900)
    assert child.returncode == 0, child.stderr[-2000:]
    return json.loads(child.stdout.splitlines()[-1])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_markers_compiled_to_nothing_leave_the_kernel_as_without_them(case, compiled_without_markers):
    got = compiled_without_markers[case.name]
    marked, plain = _marked_and_plain_ptx(case)
    assert not got["sentinels"]
    assert got["sass"] == _sass_instructions(plain)
    assert _sass_instructions(marked) != _sass_instructions(plain)  # where idle markers do change the code
    assert got["cache"].endswith("cache-gwatch-markers-none")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_sass_tier_places_the_scopes_of_markers_compiled_to_nothing(case, compiled_without_markers):
    got = compiled_without_markers[case.name]
    assert got["readings"] > 0 and set(got["scopes"]) <= set(case.scopes or got["scopes"])


def test_an_unknown_marker_mode_is_refused_in_one_line():
    env = dict(os.environ, GWATCH_MARKERS="off", PYTHONPATH=ROOT)
    child = subprocess.run([sys.executable, "-c", "import gwatch_nb.triton"], capture_output=True, text=True, env=env)
    assert child.returncode != 0
    assert child.stderr.strip().splitlines()[-1] == "ValueError: GWATCH_MARKERS='off' is not one of sentinel, none"
