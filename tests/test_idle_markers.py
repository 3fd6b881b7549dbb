"""Markers cost nothing when no trace is active: each example kernel compiles, with its
markers and without them, to the very same SASS instructions (sm_90a, Triton's own
ptxas and cuobjdump; only debug line tables differ)."""
import os
import re
import subprocess
import sys
import tempfile

import pytest

from compile_kernels import compile_ptx
from gwatch_nb import ptx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from variants import without_markers  # noqa: E402

POINTERS_AND_INTS = {"A": "*fp16", "B": "*fp16", "C": "*fp16", **{k: "i32" for k in (
    "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")}}
ATTENTION = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
             **{f"stride_{t}{d}": "i32" for t in "qkvo" for d in ("z", "h", "m" if t in "qo" else "n", "d")},
             "H": "i32", "N_CTX": "i32"}
KERNELS = {
    "matmul": ("matmul", "matmul_kernel", POINTERS_AND_INTS, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, 8, 3),
    "softmax": ("softmax", "softmax_kernel", {"X": "*fp16", "Out": "*fp16", "n_rows": "i32", "n_cols": "i32",
                                              "stride_x": "i32", "stride_out": "i32"}, {"BLOCK": 4096}, 8, 3),
    "attention": ("attention", "attn_fwd", ATTENTION,
                  {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True}, 4, 3),
}


def _sass_instructions(ptx_text: str) -> list[str]:
    cuobjdump = os.path.join(os.path.dirname(ptx.ptxas_path(90)), "cuobjdump")
    with tempfile.TemporaryDirectory() as folder:
        cubin = os.path.join(folder, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(ptx.assemble(ptx_text))
        listing = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=True).stdout
    return [" ".join(m.group(1).split()) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", listing)]


@pytest.mark.parametrize("name", KERNELS)
def test_marked_kernel_compiles_to_the_same_instructions_as_the_plain_one(name):
    module_name, kernel, signature, constexprs, num_warps, num_stages = KERNELS[name]
    marked = getattr(__import__(module_name), kernel)
    plain = getattr(without_markers(module_name), kernel)
    marked_ptx = compile_ptx(marked, signature, constexprs, num_warps, num_stages)
    plain_ptx = compile_ptx(plain, signature, constexprs, num_warps, num_stages)
    assert "gwatch.scope_start" in marked_ptx and "gwatch.scope_start" not in plain_ptx
    marked_sass, plain_sass = _sass_instructions(marked_ptx), _sass_instructions(plain_ptx)
    assert len(plain_sass) > 100
    assert marked_sass == plain_sass
