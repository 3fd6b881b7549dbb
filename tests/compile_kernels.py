"""Compile Triton kernels to PTX for sm_90 on a machine without a GPU, and read back the
SASS that Triton's ptxas makes of PTX."""
import contextlib
import functools
import os
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from gwatch_nb import triton as gwatch_triton

TARGET = GPUTarget("cuda", 90, 32)


@functools.lru_cache(maxsize=None)
def _compile(fn, signature: tuple, constexprs: tuple, num_warps: int, num_stages: int, sentinels: bool = True):
    """Triton's build of `fn`; its markers as PTX sentinels (what the ptx tier reads) unless
    `sentinels` is False (what a launch builds)."""
    src = ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs))
    with gwatch_triton.sentinels() if sentinels else contextlib.nullcontext():
        return triton.compile(src, target=TARGET, options={"num_warps": num_warps, "num_stages": num_stages})


def compile_kernel(fn, signature: dict, constexprs: dict | None = None, num_warps: int = 4, num_stages: int = 3):
    """What Triton makes of `fn` for sm_90 (its .asm holds the PTX and the cubin); constexprs
    are also named in the signature."""
    constexprs = constexprs or {}
    signature = dict(signature, **{name: "constexpr" for name in constexprs})
    return _compile(fn, tuple(signature.items()), tuple(constexprs.items()), num_warps, num_stages)


def compile_ptx(fn, signature: dict, constexprs: dict | None = None, num_warps: int = 4, num_stages: int = 3) -> str:
    """The PTX Triton makes for `fn` on sm_90."""
    return compile_kernel(fn, signature, constexprs, num_warps, num_stages).asm["ptx"]


def sass_listing(ptx_text: str) -> str:
    """cuobjdump's SASS listing of the PTX assembled for sm_90a by Triton's ptxas."""
    from gwatch_nb import ptx, toolchain
    cuobjdump = toolchain.cuobjdump(90)
    with tempfile.TemporaryDirectory() as folder:
        cubin = os.path.join(folder, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(ptx.assemble(ptx_text))
        return subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=True).stdout
