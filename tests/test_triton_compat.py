"""The one module that uses Triton's internals, on the Triton installed here: it
assembles a kernel's PTX exactly as Triton did, finds its ptxas, and reads its compile
metadata (real kernels compiled for sm_90 by tests/compile_kernels.py)."""
import os

import pytest

from compile_kernels import _compile
from corpus_kernels import basics
from gwatch_nb import triton_compat
from gwatch_nb.errors import UnsupportedTritonError

SIGNATURE = (("X", "*fp32"), ("Y", "*fp32"), ("Out", "*fp32"), ("N", "i32"), ("BLOCK", "constexpr"))


@pytest.fixture(scope="module")
def compiled():
    return _compile(basics.vector_add_marked, SIGNATURE, (("BLOCK", 256),), 4, 3)


def test_assembling_like_triton_gives_tritons_own_cubin(compiled):
    metadata = triton_compat.metadata_dict(compiled.metadata)
    assert metadata["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
    assert triton_compat.assemble_like_triton(compiled.asm["ptx"], metadata) == compiled.asm["cubin"]


def test_ptxas_is_tritons_and_names_what_decides_the_cubin(compiled):
    tool = triton_compat.ptxas(90)
    assert os.access(tool.path, os.X_OK) and tool.version
    identity = triton_compat.ptxas_identity(triton_compat.metadata_dict(compiled.metadata))
    assert identity.startswith(f"{tool.path}|{tool.version}|") and "enable_fp_fusion" in identity


def test_a_kernel_never_loaded_is_not_a_traceable_compiled_kernel(compiled):
    # No GPU here: Triton never loads it, so it has no CUfunction handle a launch could name.
    assert compiled.function is None and triton_compat.loaded_handle(compiled) is None
    assert all(obj is not compiled for obj, *_ in triton_compat.compiled_kernels())


def test_an_interpreted_kernel_without_launch_hooks_is_named_as_such():
    class TritonBefore36InterpretedFunction:  # what 3.4 and 3.5 hand out: no add_pre_run_hook
        pre_run_hooks = None
    with pytest.raises(UnsupportedTritonError, match=r"the interpreter tier needs Triton 3\.6 or later"):
        triton_compat.add_pre_run_hook(TritonBefore36InterpretedFunction(), lambda *a, **k: None)


def test_tritons_missing_driver_error_is_recognised():
    torch = pytest.importorskip("torch")
    from gwatch_nb import NoGPUError
    from gwatch_nb.cuda import driver
    try:
        driver.init()
        pytest.skip("this machine has a GPU driver")
    except NoGPUError:
        pass
    x = torch.randn(16)
    with pytest.raises(RuntimeError) as caught:
        basics.vector_add[(1,)](x, x, torch.empty_like(x), 16, BLOCK=16)
    assert triton_compat.is_missing_gpu_driver(caught.value)
    assert not triton_compat.is_missing_gpu_driver(RuntimeError("out of memory"))


def test_a_compiled_kernels_config_is_its_constexprs_and_compile_options():
    compiled = _compile(basics.vector_add_marked, SIGNATURE, (("BLOCK", 128),), 8, 2)
    config = triton_compat.compiled_config(compiled)
    assert config == {"constexprs": {"BLOCK": 128}, "num_warps": 8, "num_stages": 2, "num_ctas": 1, "maxnreg": None}
    from gwatch_nb import launch_config
    assert launch_config.label(config) == "BLOCK=128 num_warps=8 num_stages=2 num_ctas=1"


def test_an_autotune_config_reads_as_a_launch_config():
    import triton
    config = triton.Config({"BLOCK_N": 64, "DTYPE": triton.language.float16}, num_warps=4, num_stages=5, maxnreg=128)
    assert triton_compat.autotune_config(config) == {
        "constexprs": {"BLOCK_N": 64, "DTYPE": "fp16"}, "num_warps": 4, "num_stages": 5, "num_ctas": 1, "maxnreg": 128}
