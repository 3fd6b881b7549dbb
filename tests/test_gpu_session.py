"""The ptx tier's session behind the protocol, on a real GPU: what it met becomes
Trace.warnings of its own kind (kept by the archive and shown by the HTML), its meta
carries the instrumentation's cost, and "auto" picks a GPU tier."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from examples import matmul
from gwatch_nb import api, do_trace, load, tiers
from gwatch_nb.cuda.session import TraceSession
from gwatch_nb.options import TraceOptions
from gwatch_nb.tiers import TracingSession

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def x():
    torch.manual_seed(3)
    x = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    matmul.matmul(x, x)  # compiled and loaded before the trace
    torch.cuda.synchronize()
    return x


def test_auto_is_the_gpu_and_the_session_answers_the_protocol(x):
    gpu_tier = tiers.resolve("auto")  # the sass tier on an sm_90 GPU, the ptx tier on others
    session = api.start(TraceOptions(r"matmul_kernel", "auto", launches="first"))
    try:
        matmul.matmul(x, x)
        matmul.matmul(x, x)
    finally:
        session.stop()
    assert isinstance(session, TraceSession) and isinstance(session, TracingSession) and session.tier == gpu_tier
    assert session.launched["matmul_kernel"] == 2 and len(session.records()) == 1
    assert session.problems() == [] and session.interrupted is False
    change = session.meta()["instrumentation"]["matmul_kernel"]
    assert change["registers"][1] >= change["registers"][0] > 0
    trace = api.finish(session, matmul.SCOPES)
    assert trace.meta["tier"] == gpu_tier and trace.meta["instrumentation"]["matmul_kernel"] == change


def test_a_launch_in_graph_capture_is_a_warning_beside_a_traced_launch(x, tmp_path):
    graph = torch.cuda.CUDAGraph()

    def both():
        matmul.matmul(x, x)
        with torch.cuda.graph(graph):
            matmul.matmul(x, x)

    with pytest.warns(UserWarning, match="graph_capture: matmul_kernel: launched during CUDA graph capture"):
        trace = do_trace(both, r"matmul_kernel")
    graph.reset()
    assert len(trace.launches) == 1
    assert [w.kind for w in trace.warnings if w.kind != "instrumentation_cost"] == ["graph_capture"]
    trace.save(tmp_path / "t.json")
    assert [w.kind for w in load(tmp_path / "t.json").warnings] == [w.kind for w in trace.warnings]
    pytest.importorskip("altair", reason="the HTML part needs altair (pip install altair)")
    trace.to_html(tmp_path / "t.html")
    assert "graph_capture: matmul_kernel: launched during CUDA graph capture" in (tmp_path / "t.html").read_text()


def test_the_magic_keeps_the_widget_it_shows(x):
    pytest.importorskip("IPython")
    pytest.importorskip("anywidget")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext gwatch_nb", store_history=False)
    shell.user_ns.update(matmul=matmul, x=x)
    with capture_output():
        result = shell.run_cell("%%gwatch -k matmul_kernel -t auto -o tr\nmatmul.matmul(x, x)\n")
    assert result.success
    assert shell.user_ns["tr"].meta["tier"] == tiers.resolve("auto")
    assert shell.user_ns["_gwatch_widget"]._trace is shell.user_ns["tr"]


@pytest.mark.parametrize("tier", ["sass", "auto", "ptx"])
def test_a_trace_that_is_the_processs_first_cuda_work(tier):
    """Tracing starts before any CUDA context exists (a fresh process whose first GPU work
    is the traced code): the tiers pick the device that work will use."""
    script = (
        "import torch, gwatch_nb\n"
        "from examples import softmax\n"
        "work = lambda: softmax.softmax(torch.randn(256, 512, device='cuda'))\n"
        f"print(len(gwatch_nb.do_trace(work, 'softmax_kernel', instrumentation_tier={tier!r}).df))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 0
