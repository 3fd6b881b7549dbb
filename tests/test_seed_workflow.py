"""The G-Watch documentation's workflow, verbatim, through the `gwatch` names: traced,
rendered to .json and .html, and read back with `gwatch show`. It runs on the Triton
interpreter here; the GPU version (tier "ptx") runs on a machine with an NVIDIA GPU."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import gwatch.cuda.xtrace.triton as gw_trace
import triton
import triton.language as tl
from compile_kernels import compile_ptx
from gwatch_nb.report import load_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "cuda", "trace", "trace_triton_attention.py")

# The documentation's code, unchanged, around a small kernel; the report paths come from argv.
WORKFLOW = textwrap.dedent('''
    import os
    import sys
    if sys.argv[1] == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton
    import triton.language as tl

    import gwatch.cuda.xtrace.triton as gw_trace      # gw_trace.scope_start(100) / gw_trace.scope_end(100) inside @triton.jit
    import gwatch.libpygwatch as pygwatch
    from gwatch.cuda.xtrace import do_trace
    pygwatch.init_cupti_hooks()   # before the first module load; returns True when hooks are live, False (no raise) on a machine without a GPU/CUPTI

    @triton.jit
    def my_kernel(X, Y, N, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        gw_trace.scope_start(100)
        x = tl.load(X + offs, mask=offs < N)
        gw_trace.scope_end(100)
        gw_trace.scope_start(101)
        tl.store(Y + offs, x * 2, mask=offs < N)
        gw_trace.scope_end(101)

    device = "cuda" if sys.argv[1] == "ptx" else "cpu"
    x = torch.randn(1000, device=device)
    y = torch.empty_like(x)

    def run_my_kernel(x, y):
        my_kernel[(8,)](x, y, x.numel(), BLOCK=128)

    result = do_trace(fn=lambda: run_my_kernel(x, y), kernel_name_pattern=r".*my_kernel.*", dsl="triton",
                      scope_name_map={100: "load_kv", 101: "dot_qk"}, instrumentation_tier=sys.argv[1])
    from gwatch.common.format import File
    from gwatch.cuda.xtrace.format import Section_IntraKernelTrace
    section = Section_IntraKernelTrace()
    section.add_run(result)
    report = File(title="Xtrace")
    report.add_section(section)
    report.render(sys.argv[2])     # ".json" gives the agent archive
    report.render(sys.argv[3])
    assert torch.equal(y, x * 2)
    print("hooks", pygwatch.init_cupti_hooks())
''')


def _run(*args, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd,
                          env=env)


def _check_outputs(tmp_path, tier: str, second: str) -> None:
    report = load_report(tmp_path / "trace.json")
    assert report.title == "Xtrace" and [len(s.runs) for s in report.sections] == [1]
    trace = report.sections[0].runs[0]
    assert trace.meta["tier"] == tier
    counts = trace.df.groupby("scope", observed=True).size().to_dict()
    warps_per_block = 1 if tier == "interpreter" else 4
    assert counts == {"load_kv": 8 * warps_per_block, "dot_qk": 8 * warps_per_block}
    # The only warning a clean trace may carry: instrumenting this small kernel raises its
    # registers (10 -> 36 on the H200) and costs occupancy, which meta then states.
    costly = [w for w in trace.warnings if w.kind == "instrumentation_cost"]
    assert [w for w in trace.warnings if w not in costly] == []
    assert bool(costly) == (tier == "ptx" and any(
        change["blocks_per_sm"][1] < change["blocks_per_sm"][0] or change["local_bytes"][1] > change["local_bytes"][0]
        for change in trace.meta["instrumentation"].values()))

    if second == "trace.html":
        html = (tmp_path / second).read_text(encoding="utf-8")
        assert "Xtrace" in html and "load_kv" in html
    else:
        events = json.loads((tmp_path / second).read_text())["traceEvents"]
        assert sum(e["ph"] == "X" for e in events) == len(trace.df)

    shown = _run("-m", "gwatch_nb.cli", "show", tmp_path / "trace.json", "--width", "100", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "my_kernel" in shown.stdout and f"tier {tier}" in shown.stdout
    assert re.search(rf"load_kv\s+{counts['load_kv']}\s", shown.stdout)
    as_json = _run("-m", "gwatch_nb.cli", "show", tmp_path / "trace.json", "--json", "--stats", cwd=tmp_path)
    (run,) = json.loads(as_json.stdout)["runs"]
    assert {s["scope"]: s["count"] for s in run["stats"]} == counts


def test_documented_workflow_on_the_interpreter(tmp_path):
    pytest.importorskip("gwatch_nb.html", reason="the .html report is rendered by gwatch_nb.html")
    script = tmp_path / "workflow.py"
    script.write_text(WORKFLOW)
    result = _run(script, "interpreter", tmp_path / "trace.json", tmp_path / "trace.html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hooks False" in result.stdout  # no GPU here: False, and no exception
    _check_outputs(tmp_path, "interpreter", "trace.html")


@pytest.mark.gpu
def test_documented_workflow_on_the_gpu(tmp_path):
    # Perfetto rather than HTML: the GPU machine's image lacks the notebook-side packages.
    script = tmp_path / "workflow.py"
    script.write_text(WORKFLOW)
    result = _run(script, "ptx", tmp_path / "trace.json", tmp_path / "trace.perfetto.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hooks True" in result.stdout
    _check_outputs(tmp_path, "ptx", "trace.perfetto.json")


def test_example_script_then_gwatch_show(tmp_path):
    report = tmp_path / "trace.json"
    interpreter = dict(os.environ, TRITON_INTERPRET="1")  # its CPU sizes, on any machine
    # A second run with --causal shows the options reach the kernel: fewer scope instances.
    made = _run(EXAMPLE, "--report", report, cwd=tmp_path, env=interpreter)
    assert made.returncode == 0, made.stderr
    assert f"wrote {report}" in made.stdout
    written = load_report(report)
    assert written.title == "Attention forward (attn_fwd): batch 1, 2 heads, context 128, head dim 32"
    full = written.sections[0].runs[0]
    assert full.meta["tier"] == "interpreter"
    made = _run(EXAMPLE, "--report", report, "--causal", "--n-ctx", "64", cwd=tmp_path, env=interpreter)
    assert made.returncode == 0, made.stderr
    causal = load_report(report).sections[0].runs[0]
    assert set(full.df["scope"].astype(str)) == {"load_kv", "dot_qk", "softmax", "dot_pv"}
    # 128 context / 32 per block: 4 row blocks x 2 heads, each stepping over all 4 column blocks.
    assert len(full.df) == 4 * 2 * 4 * 4
    # Causal, 64 context: 2 row blocks x 2 heads, stepping over 1 and 2 column blocks.
    assert len(causal.df) == 2 * (1 + 2) * 4
    shown = _run("-m", "gwatch_nb.cli", "show", report, cwd=tmp_path)
    assert shown.returncode == 0 and "SCOPES" in shown.stdout and "TIMELINE" in shown.stdout, shown.stderr


@pytest.mark.gpu
def test_example_script_on_the_gpu(tmp_path):
    report = tmp_path / "trace.json"
    made = _run(EXAMPLE, "--report", report, "--n-ctx", "1024", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    trace = load_report(report).sections[0].runs[0]
    assert trace.meta["tier"] == "ptx" and trace.events_dropped == 0 and trace.warnings == []


@triton.jit
def _marked(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    gw_trace.scope_start(7)
    x = tl.load(X + offs)
    gw_trace.scope_end(7)
    tl.store(X + offs, x + 1)


def test_gwatch_markers_compile_to_ptx_sentinels():
    ptx = compile_ptx(_marked, {"X": "*fp32"}, {"BLOCK": 128})
    assert "// gwatch.scope_start 7" in ptx and "// gwatch.scope_end 7" in ptx


def test_unsupported_choices_name_what_is_supported():
    from gwatch.cuda.xtrace import do_trace
    with pytest.raises(ValueError, match=r"instrumentation_tier='nvbit' is not supported; supported: auto, ptx, sass, "
                                         r"interpreter"):
        do_trace(fn=lambda: None, kernel_name_pattern="k", dsl="triton", instrumentation_tier="nvbit")
    with pytest.raises(ValueError, match=r"dsl='cute' is not supported; supported: triton"):
        do_trace(fn=lambda: None, kernel_name_pattern="k", dsl="cute", instrumentation_tier="ptx")
