"""Kernels torch.compile launches itself: Inductor loads the cubin Triton built through its own
launcher (StaticallyLaunchedCudaKernel), so Triton neither hooks that load nor keeps a
CompiledKernel with the PTX. The trace finds the kernel by its launcher's handle and reads its
PTX and cubin from the files Triton cached under the kernel's hash. Real Triton build, real
Inductor launcher class; with no GPU to load the cubin, the test gives the launcher the handle
its load_kernel would have set."""
import os

import pytest

pytest.importorskip("torch")
static_triton_launcher = pytest.importorskip("torch._inductor.runtime.static_triton_launcher")

import triton  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from compile_kernels import TARGET  # noqa: E402
from corpus_kernels import basics  # noqa: E402
from gwatch_nb import triton_compat  # noqa: E402
from gwatch_nb.sources import TritonSources  # noqa: E402

HANDLE = 0x7E57  # stands in for the CUfunction the driver would return


@pytest.fixture
def launcher(tmp_path, monkeypatch):
    from triton import knobs
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path)
        kernel = triton.compile(ASTSource(basics.vector_add, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "N": "i32",
                                                              "BLOCK": "constexpr"}, {"BLOCK": 256}), target=TARGET)
    # What Inductor sets on the kernels it builds before handing them to its launcher.
    kernel._cubin_path = os.path.join(str(tmp_path), triton_compat.cache_folder(kernel.hash), kernel.name + ".cubin")
    made = static_triton_launcher.StaticallyLaunchedCudaKernel(kernel)
    made.function = HANDLE
    yield kernel, made
    made.function = None


def test_a_kernel_inductor_launches_itself_is_found_with_its_ptx_and_cubin(launcher):
    kernel, _ = launcher
    found = TritonSources._from_compiled_kernels(HANDLE)
    assert found is not None and found.origin == "triton-cache" and found.name == "vector_add"
    assert found.ptx == kernel.asm["ptx"] and found.cubin == kernel.asm["cubin"]
    assert found.metadata["num_warps"] == kernel.metadata.num_warps


def test_a_launcher_whose_files_are_gone_is_not_a_source(launcher, tmp_path):
    kernel, _ = launcher
    folder = tmp_path / triton_compat.cache_folder(kernel.hash)
    for f in folder.iterdir():
        f.unlink()
    assert TritonSources._from_compiled_kernels(HANDLE) is None
