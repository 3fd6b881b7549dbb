"""Markers cost nothing when no trace is active: each example kernel compiles, with its
markers and without them, to the very same SASS instructions (sm_90a, Triton's own
ptxas and cuobjdump; only debug line tables differ)."""
import os
import re
import sys

import pytest

import softmax
from compile_kernels import compile_ptx, sass_listing
from corpus import CASES, Case

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from variants import without_markers  # noqa: E402

# The corpus's cases for examples/matmul.py and examples/attention.py, and the example softmax.
EXAMPLES = [c for c in CASES if c.name in ("matmul", "attention fwd d64", "attention fwd d128 causal")] + [
    Case("example softmax", softmax.softmax_kernel,
         {"X": "*fp16", "Out": "*fp16", "n_rows": "i32", "n_cols": "i32", "stride_x": "i32", "stride_out": "i32"},
         {"BLOCK": 4096}, num_warps=8)]


def _sass_instructions(ptx_text: str) -> list[str]:
    listing = sass_listing(ptx_text)
    return [" ".join(m.group(1).split()) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", listing)]


@pytest.mark.parametrize("case", EXAMPLES, ids=[c.name for c in EXAMPLES])
def test_marked_kernel_compiles_to_the_same_instructions_as_the_plain_one(case):
    plain = getattr(without_markers(case.fn.__module__), case.fn.__name__)
    marked_ptx = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    plain_ptx = compile_ptx(plain, case.signature, case.constexprs, case.num_warps, case.num_stages)
    assert "gwatch.scope_start" in marked_ptx and "gwatch.scope_start" not in plain_ptx
    marked_sass, plain_sass = _sass_instructions(marked_ptx), _sass_instructions(plain_ptx)
    assert len(plain_sass) > 100
    assert marked_sass == plain_sass
