"""Markers compile to nothing by default: the kernel a launch builds is the one it would be
without them, instruction for instruction, even where markers left as sentinels change
Triton's code (the pipelined persistent matmuls, tests/test_idle_markers.py); the sass tier
still places their scopes, from the kernel's Python source, on that kernel; and a trace that
needs the sentinels (the ptx tier, the sass tier's count check) compiles a copy with them,
cached apart, so that neither build ever stands in for the other. GWATCH_MARKERS=sentinel
makes every build keep them."""
import os
import subprocess
import sys

import pytest

from compile_kernels import _compile, compile_ptx
from corpus import CASES as ALL_CASES
from test_idle_markers import FLATTENED, PERSISTENT, _marked_and_plain_ptx, _sass_instructions
from gwatch_nb import sentinels
from gwatch_nb.sass import markers
from gwatch_nb.sass.instrument import instrument
from gwatch_nb.sources import from_compiled_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [FLATTENED, PERSISTENT[0]]
# A warp-specialized kernel's metadata counts every partition's warps: the copy is built with
# the warps its launch asked for, as the kernel was.
(WARP_SPECIALIZED,) = [c for c in ALL_CASES if c.name == "warp-specialized TMA matmul"]

if os.environ.get("TRITON_INTERPRET") == "1":
    pytest.skip("compiling needs Triton's compiler, which TRITON_INTERPRET=1 replaces", allow_module_level=True)


def _launch_build(case):
    """What a launch of the case's kernel builds (markers as GWATCH_MARKERS leaves them: nothing)."""
    signature = dict(case.signature, **{name: "constexpr" for name in case.constexprs})
    return _compile(case.fn, tuple(signature.items()), tuple(case.constexprs.items()), case.num_warps,
                    case.num_stages, sentinels=False)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_markers_compile_to_nothing_and_leave_the_kernel_as_without_them(case):
    built = _launch_build(case)
    marked, plain = _marked_and_plain_ptx(case)
    assert not sentinels.has_sentinels(built.asm["ptx"])
    assert _sass_instructions(built.asm["ptx"]) == _sass_instructions(plain)
    assert _sass_instructions(marked) != _sass_instructions(plain)  # where sentinels do change the code


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_sass_tier_places_the_scopes_of_markers_compiled_to_nothing(case):
    made = instrument(_launch_build(case).asm["cubin"], case.fn.__name__, markers.from_source(case.fn))
    assert len(made.sites["site"]) > 0 and set(made.sites["scope"]) <= set(case.scopes)


@pytest.mark.parametrize("case", CASES + [WARP_SPECIALIZED], ids=lambda c: c.name)
def test_a_trace_that_needs_sentinels_compiles_a_copy_with_them(case):
    built = _launch_build(case)
    source = from_compiled_kernel(built)
    copy = sentinels.ensure(source)
    assert copy.ptx == compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    assert copy.cubin == source.cubin and copy.digest != source.digest
    assert copy.metadata == source.metadata
    # Cached apart: the next launch build is still the one without sentinels.
    _compile.cache_clear()
    assert _launch_build(case).asm["ptx"] == built.asm["ptx"]


def test_a_kernel_whose_source_writes_no_markers_is_left_as_it_is():
    from test_idle_markers import _plain
    case = PERSISTENT[0]
    plain = _plain(case)
    signature = dict(case.signature, **{name: "constexpr" for name in case.constexprs})
    built = _compile(plain, tuple(signature.items()), tuple(case.constexprs.items()), case.num_warps,
                     case.num_stages, sentinels=False)
    source = from_compiled_kernel(built)
    assert sentinels.ensure(source) is source


CHILD = """
import triton
from triton.compiler import ASTSource
from compile_kernels import TARGET
from corpus_kernels import basics

source = ASTSource(basics.vector_add_marked, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "N": "i32",
                                              "BLOCK": "constexpr"}, {"BLOCK": 256})
print("gwatch.scope_start 1" in triton.compile(source, target=TARGET).asm["ptx"], triton.knobs.cache.dir)
"""


def test_gwatch_markers_sentinel_keeps_them_in_every_build_cached_apart(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env.update(GWATCH_MARKERS="sentinel", HOME=str(tmp_path), PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests")]))
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    kept, cache = child.stdout.split()
    assert kept == "True" and cache == str(tmp_path / ".triton" / "cache-gwatch-sentinels")


def test_an_unknown_marker_mode_is_refused_in_one_line():
    env = dict(os.environ, GWATCH_MARKERS="off", PYTHONPATH=ROOT)
    child = subprocess.run([sys.executable, "-c", "import gwatch_nb.triton"], capture_output=True, text=True, env=env)
    assert child.returncode != 0
    assert child.stderr.strip().splitlines()[-1] == "ValueError: GWATCH_MARKERS='off' is not one of none, sentinel"
