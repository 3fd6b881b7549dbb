"""Failures around a trace on a real GPU: each gives one clear error, the kernel's results
stay right, and afterwards the callbacks are off, the originals run, GPU memory is back
where it was, and a second trace works. Cases that leave CUPTI or the driver in a state
of their own run in a fresh Python process."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from examples import matmul
from gwatch_nb import TraceFailedError, do_trace
from gwatch_nb.cuda import driver

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _outside_torch() -> int:
    """Device memory in use that torch's caching allocator does not hold: trace buffers,
    loaded modules, events (torch keeps freed blocks of its own, and outputs are its)."""
    torch.cuda.synchronize()
    free, total = driver.free_memory()
    return total - free - torch.cuda.memory_reserved()


def _fresh_python(*parts: str, **env) -> subprocess.CompletedProcess:
    """Run the code parts, one after another, in a new interpreter with the examples importable."""
    prelude = f"import sys; sys.path.insert(0, {ROOT!r})\n"
    code = prelude + "".join(textwrap.dedent(part) for part in parts)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, **env), timeout=300)


def _after_a_failure_all_is_normal(x, expected, in_use_before):
    assert _outside_torch() == in_use_before
    assert torch.equal(matmul.matmul(x, x), expected)
    trace = do_trace(lambda: matmul.matmul(x, x), r"matmul_kernel")
    assert trace.events_dropped == 0 and (trace.warps.events == matmul.events_per_warp(x.shape[1])).all()
    assert _outside_torch() == in_use_before


@pytest.fixture
def square():
    """A matmul, its result, and the device memory in use once everything the tests run has
    run once (modules load lazily and stay loaded; trace buffers must not stay)."""
    torch.manual_seed(3)
    x = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    expected = matmul.matmul(x, x)
    y = x + 1
    do_trace(lambda: matmul.matmul(x, x), r"matmul_kernel")
    del y
    return x, expected, _outside_torch()


def test_launch_during_graph_capture_is_not_swapped(square):
    x, expected, in_use_before = square
    graph = torch.cuda.CUDAGraph()
    out = {}

    def capture():
        with torch.cuda.graph(graph):
            out["c"] = matmul.matmul(x, x)

    with pytest.raises(TraceFailedError, match="graph capture"):
        do_trace(capture, r"matmul_kernel")
    out["c"].zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out["c"], expected)  # the captured kernel is the original one
    graph.reset()  # frees the graph's memory pool before the next measurement
    out.clear()
    _after_a_failure_all_is_normal(x, expected, _outside_torch())


def test_matching_kernel_without_ptx_runs_untraced(square):
    x, expected, in_use_before = square
    out = {}
    with pytest.raises(TraceFailedError, match="PTX was not found"):
        do_trace(lambda: out.setdefault("y", x + 1), r"elementwise")
    assert torch.equal(out["y"], x + 1)
    _after_a_failure_all_is_normal(x, expected, in_use_before)


def test_keyboard_interrupt_in_the_traced_code(square):
    x, expected, in_use_before = square

    def interrupted():
        matmul.matmul(x, x)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        do_trace(interrupted, r"matmul_kernel")
    _after_a_failure_all_is_normal(x, expected, in_use_before)


def test_launches_from_two_threads_on_two_streams_are_both_recorded(square):
    x, expected, in_use_before = square
    y = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    expected_y = matmul.matmul(y, y)
    results, errors = {}, []
    streams = {"x": torch.cuda.Stream(), "y": torch.cuda.Stream()}
    in_use_before = _outside_torch()

    def launch(name, tensor):
        try:
            stream = streams[name]
            with torch.cuda.stream(stream):
                results[name] = matmul.matmul(tensor, tensor)
            stream.synchronize()
        except Exception as error:  # surfaced by the assertion below
            errors.append(error)

    def both():
        threads = [threading.Thread(target=launch, args=(n, t)) for n, t in (("x", x), ("y", y))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    trace = do_trace(both, r"matmul_kernel")
    assert not errors
    assert torch.equal(results["x"], expected) and torch.equal(results["y"], expected_y)
    assert sorted(trace.launches.warps) == [(512 // 128) ** 2 * 8, (1024 // 128) ** 2 * 8]
    for index, row in trace.launches.iterrows():
        k = 512 if row.warps == (512 // 128) ** 2 * 8 else 1024
        assert (trace.warps[trace.warps.launch == index].events == matmul.events_per_warp(k)).all()
    assert trace.events_dropped == 0
    assert _outside_torch() == in_use_before


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_trace_on_the_second_gpu():
    with torch.cuda.device(1):
        x = torch.randn(512, 512, device="cuda:1", dtype=torch.float16)
        expected = matmul.matmul(x, x)
        out = {}
        trace = do_trace(lambda: out.setdefault("c", matmul.matmul(x, x)), r"matmul_kernel")
    assert torch.equal(out["c"], expected)
    assert trace.records[0].info["device_index"] == 1
    assert (trace.warps.events == matmul.events_per_warp(512)).all()


def test_missing_cupti_is_one_clear_error_before_the_code_runs():
    done = _fresh_python("""
        from gwatch_nb import do_trace, CuptiUnavailableError
        ran = []
        try:
            do_trace(lambda: ran.append(1), "k")
        except CuptiUnavailableError as error:
            print("ERROR:", error)
        print("RAN:", ran)
    """, GWATCH_CUPTI_PATH="/nonexistent/libcupti.so")
    assert "ERROR: CUPTI library not found" in done.stdout, done.stderr
    assert "RAN: []" in done.stdout


@pytest.mark.parametrize("holder", ["torch.profiler", "proton"])
def test_cupti_held_by_another_tool_stops_before_the_code_runs(holder):
    hold = {
        "torch.profiler": """
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]):
                matmul.matmul(x, x)
        """,
        "proton": """
            import triton.profiler as proton
            proton.start("/tmp/gwatch-proton-holder", backend="cupti")
        """,
    }[holder]
    done = _fresh_python("""
        import torch
        from examples import matmul
        from gwatch_nb import do_trace, CuptiBusyError
        x = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    """, hold, """
        ran = []
        try:
            do_trace(lambda: ran.append(1), "matmul_kernel")
        except CuptiBusyError as error:
            print("ERROR:", error)
        print("RAN:", ran)
    """)
    assert "ERROR: CUPTI is held by another tool" in done.stdout, done.stdout + done.stderr
    assert "RAN: []" in done.stdout


def test_ptxas_failure_keeps_the_ptx_and_runs_the_original(tmp_path):
    fake = tmp_path / "ptxas"
    real = subprocess.run([sys.executable, "-c", "from triton.backends.nvidia.compiler import get_ptxas;"
                           "print(get_ptxas(90).path)"], capture_output=True, text=True).stdout.strip()
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && exec {real} --version\n"
                    "echo 'ptxas error   : out of resources (injected)' >&2\nexit 1\n")
    fake.chmod(0o755)
    done = _fresh_python("""
        import os, torch
        from examples import matmul
        from gwatch_nb import do_trace, TraceFailedError
        x = torch.randn(512, 512, device="cuda", dtype=torch.float16)
        expected = matmul.matmul(x, x)      # compiled and loaded with the real ptxas
        os.environ["TRITON_PTXAS_PATH"] = os.environ["TRITON_PTXAS_BLACKWELL_PATH"] = os.environ["FAKE_PTXAS"]
        out = {}
        try:
            do_trace(lambda: out.setdefault("c", matmul.matmul(x, x)), "matmul_kernel")
        except TraceFailedError as error:
            print("ERROR:", error)
        print("SAME:", torch.equal(out["c"], expected))
    """, FAKE_PTXAS=str(fake), GWATCH_CACHE_DIR=str(tmp_path / "cache"))
    assert "ERROR: matmul_kernel: ptxas rejected the instrumented PTX" in done.stdout, done.stdout + done.stderr
    assert "injected" in done.stdout and "SAME: True" in done.stdout
    kept = list((tmp_path / "cache" / "failed").glob("matmul_kernel-*.ptx"))
    assert len(kept) == 1 and "__gwatch_trace_buffer" in kept[0].read_text()


def test_many_launches_keep_device_memory_bounded(square):
    x, expected, in_use_before = square
    # 40 launches of 67 MB buffers: more than the session keeps pending, so it collects early.
    trace = do_trace(lambda: [matmul.matmul(x, x) for _ in range(40)], r"matmul_kernel", capacity=1 << 16)
    assert len(trace.launches) == 40 and trace.events_dropped == 0
    sizes = np.array([r.info["buffer_bytes"] for r in trace.records])
    assert (sizes == sizes[0]).all()
    assert _outside_torch() == in_use_before
