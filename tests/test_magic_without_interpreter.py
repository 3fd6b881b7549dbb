"""%%gwatch on a machine without a GPU, in a process that did not set TRITON_INTERPRET=1:
the magic chose the interpreter tier, the kernel was compiled for a GPU, and Triton's own
"0 active drivers" is replaced by what to do."""
import pytest

IPython = pytest.importorskip("IPython")
torch = pytest.importorskip("torch")

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from corpus_kernels import basics
from gwatch_nb import NoGPUError
from gwatch_nb.cuda import driver


def _has_gpu() -> bool:
    try:
        return driver.init() > 0
    except NoGPUError:
        return False


pytestmark = pytest.mark.skipif(_has_gpu(), reason="checks a machine without a GPU")


def test_a_gpu_kernel_on_the_interpreter_tier_says_to_set_triton_interpret():
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext gwatch_nb", store_history=False)
    shell.user_ns.update(basics=basics, torch=torch, x=torch.randn(100))
    with capture_output() as captured:
        result = shell.run_cell("%%gwatch -k vector_add -o tr\n"
                                "basics.vector_add_marked[(1,)](x, x, torch.empty_like(x), 100, BLOCK=1024)\n")
    assert not result.success
    assert "0 active drivers" in captured.stdout  # Triton's own traceback, as the shell shows it
    assert "set TRITON_INTERPRET=1 before triton is imported" in captured.stderr
    assert "tr" not in shell.user_ns
