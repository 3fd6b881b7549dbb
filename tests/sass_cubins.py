"""The sm_90a cubins ptxas makes of the corpus kernels and the examples, for the SASS tier's
tests: `cubins()` maps a case name to its cubin, compiled once per process (Triton's own cache
keeps them across runs)."""
import functools
import os
import re
import subprocess
import tempfile

import numpy as np
import triton

if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter replaces the compiler these cubins need
    import pytest
    pytest.skip("compiling cubins needs Triton's compiler, which TRITON_INTERPRET=1 replaces with its interpreter",
                allow_module_level=True)

from examples import attention
import corpus
from examples import softmax as softmax_example
from compile_kernels import _compile


def _example_attention(head_dim: int, causal: bool) -> corpus.Case:
    """attention fwd as examples/attention.py launches it for this head size."""
    return corpus.Case(f"example attention fwd d{head_dim}{' causal' if causal else ''}", attention.attn_fwd,
                       corpus.ATTN_SIG, {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal},
                       num_warps=8 if head_dim >= 128 else 4, num_stages=3 if head_dim <= 64 else 2)


EXAMPLE_SOFTMAX_BLOCK = 4096  # a 4096-column row, as bench/overhead.py runs it
EXAMPLES = [
    _example_attention(64, False), _example_attention(64, True),
    _example_attention(128, False), _example_attention(128, True),
    corpus.Case("example softmax", softmax_example.softmax_kernel,
                {"X": "*fp16", "Out": "*fp16", "n_rows": "i32", "n_cols": "i32", "stride_x": "i32", "stride_out": "i32"},
                {"BLOCK": EXAMPLE_SOFTMAX_BLOCK}, num_warps=8),
]
CASES = corpus.CASES + EXAMPLES


def compiled(case: corpus.Case):
    """Triton's CompiledKernel of `case` for sm_90 (its .asm["cubin"] is the sm_90a cubin)."""
    signature = dict(case.signature, **{name: "constexpr" for name in case.constexprs})
    return _compile(case.fn, tuple(signature.items()), tuple(case.constexprs.items()), case.num_warps,
                    case.num_stages)


@functools.lru_cache(maxsize=None)
def cubins() -> dict[str, bytes]:
    """Case name -> sm_90a cubin, for every corpus case and example."""
    return {case.name: compiled(case).asm["cubin"] for case in CASES}


H200_CUBINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "cubins_h200.npz")


def h200_cubins() -> dict[str, bytes]:
    """The same cases as the H200's Triton 3.6 (ptxas 12.8) compiled them (tests/capture_cubins.py)."""
    with np.load(H200_CUBINS) as archive:
        return {name: archive[name].tobytes() for name in archive.files if name != "triton_version"}


BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
PTXAS_12 = os.path.join(BIN, "ptxas")  # CUDA 12.9: the older ELF layout (ABI 7)


def tool(name: str) -> str:
    """Path of a CUDA tool Triton ships (ptxas, ptxas-blackwell, nvdisasm, cuobjdump)."""
    return os.path.join(BIN, name)


def assemble(ptx: str, ptxas: str, arch: str = "sm_90a") -> tuple[bytes, str]:
    """(cubin, ptxas -v report) of `ptx` assembled as Triton does (-lineinfo)."""
    with tempfile.TemporaryDirectory() as folder:
        src, out = os.path.join(folder, "k.ptx"), os.path.join(folder, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([ptxas, "-v", "-lineinfo", f"-arch={arch}", src, "-o", out], capture_output=True,
                              text=True, check=True)
        with open(out, "rb") as f:
            return f.read(), proc.stdout + proc.stderr


@functools.lru_cache(maxsize=None)
def ptxas12_cubins() -> dict[str, tuple[bytes, str]]:
    """Case name -> (cubin, ptxas -v report) of its PTX assembled by CUDA 12.9's ptxas (PTX 8.8, the
    newest it reads: Triton's PTX uses nothing newer)."""
    return {case.name: assemble(re.sub(r"^\.version \S+", ".version 8.8", compiled(case).asm["ptx"], count=1,
                                       flags=re.M), PTXAS_12) for case in CASES}
