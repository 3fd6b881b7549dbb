"""Markers cost nothing when no trace is active: each example kernel compiles with its
markers and without them to the very same SASS instructions (sm_90a, Triton's own ptxas
and cuobjdump; only debug line tables differ).

Pipelined persistent kernels are the exception, pinned here (GWATCH_MARKERS=none removes it:
tests/test_markers_none.py): in the persistent TMA matmuls the idle markers
add one block barrier (``BAR.SYNC``), and in a flattened persistent loop (the tutorials'
``flatten=True``) they change the whole schedule and cost registers."""
import os
import re
import subprocess
import tempfile
from collections import Counter

import pytest

from examples import softmax
from compile_kernels import compile_ptx, sass_listing
from corpus import CASES, Case
from gwatch_nb import ptx, toolchain

from variants import without_markers

# The corpus's cases for examples/matmul.py and examples/attention.py, and the example softmax.
EXAMPLES = [c for c in CASES if c.name in ("matmul", "attention fwd d64", "attention fwd d128 causal")] + [
    Case("example softmax", softmax.softmax_kernel,
         {"X": "*fp16", "Out": "*fp16", "n_rows": "i32", "n_cols": "i32", "stride_x": "i32", "stride_out": "i32"},
         {"BLOCK": 4096}, num_warps=8)]
PERSISTENT = [c for c in CASES if c.name.startswith("persistent matmul")]
(FLATTENED,) = [c for c in CASES if c.name == "flattened persistent matmul"]
CORPUS_KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_kernels")


def _sass_instructions(ptx_text: str) -> list[str]:
    listing = sass_listing(ptx_text)
    return [" ".join(m.group(1).split()) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", listing)]


def _plain(case: Case):
    """The case's kernel compiled from its source with every marker line removed."""
    module = case.fn.__module__.rpartition(".")[2]
    folder = CORPUS_KERNELS if case.fn.__module__.startswith("corpus_kernels.") else None
    variant = without_markers(module, folder) if folder else without_markers(module)
    return getattr(variant, case.fn.__name__)


def _marked_and_plain_ptx(case: Case) -> tuple[str, str]:
    marked = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    plain = compile_ptx(_plain(case), case.signature, case.constexprs, case.num_warps, case.num_stages)
    assert "gwatch.scope_start" in marked and "gwatch.scope_start" not in plain
    return marked, plain


def _registers(ptx_text: str) -> int:
    cuobjdump = toolchain.cuobjdump(90)
    with tempfile.TemporaryDirectory() as folder:
        cubin = os.path.join(folder, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(ptx.assemble(ptx_text))
        usage = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True, check=True).stdout
    (registers,) = re.findall(r"REG:(\d+)", usage)
    return int(registers)


@pytest.mark.parametrize("case", EXAMPLES, ids=[c.name for c in EXAMPLES])
def test_marked_kernel_compiles_to_the_same_instructions_as_the_plain_one(case):
    marked_ptx, plain_ptx = _marked_and_plain_ptx(case)
    marked_sass, plain_sass = _sass_instructions(marked_ptx), _sass_instructions(plain_ptx)
    assert len(plain_sass) > 100
    assert marked_sass == plain_sass


def _without_padding(sass: list[str]) -> Counter:
    """The instructions as a multiset, NOPs and branch targets aside (both shift with any change)."""
    return Counter(re.sub(r"BRA 0x[0-9a-f]+", "BRA", line) for line in sass if line != "NOP")


@pytest.mark.parametrize("case", PERSISTENT, ids=[c.name for c in PERSISTENT])
def test_idle_markers_add_one_barrier_to_a_persistent_tma_matmul(case):
    marked_ptx, plain_ptx = _marked_and_plain_ptx(case)
    marked, plain = _without_padding(_sass_instructions(marked_ptx)), _without_padding(_sass_instructions(plain_ptx))
    assert sum(plain.values()) > 100
    assert marked - plain == Counter({"BAR.SYNC.DEFER_BLOCKING 0x0": 1}) and not plain - marked
    assert _registers(marked_ptx) == _registers(plain_ptx)


def test_idle_markers_change_a_flattened_persistent_loop():
    # The known exception (README, "Limits worth knowing"): the pipeliner copies the
    # start marker into the flattened loop's prologue, and its inline assembly changes
    # the schedule ptxas makes: 94 -> 98 registers here (Triton 3.9, sm_90a); the
    # tutorials' own persistent matmul went 114 -> 162 on the H200.
    marked_ptx, plain_ptx = _marked_and_plain_ptx(FLATTENED)
    assert _sass_instructions(marked_ptx) != _sass_instructions(plain_ptx)
    marked, plain = _registers(marked_ptx), _registers(plain_ptx)
    assert marked > plain, f"idle markers no longer cost registers ({plain} -> {marked}): update the README"
