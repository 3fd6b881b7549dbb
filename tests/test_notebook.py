"""notebooks/attention.ipynb, run top to bottom by nbclient in a fresh kernel that sees no
GPU: the attention kernel is traced live on the interpreter tier, the widget and charts
come out of the %%gwatch cell, and the analysis reads the real H200 fixture."""
import json
import re

import pytest

import gwatch_nb
from support.jupyter_lab import ROOT, copy_demo, without_gpu

nbformat = pytest.importorskip("nbformat", reason="running the notebook needs nbformat (pip install nbformat)")
nbclient = pytest.importorskip("nbclient", reason="running the notebook needs nbclient (pip install nbclient)")
pytest.importorskip("ipykernel", reason="running the notebook needs ipykernel (pip install ipykernel)")
pytest.importorskip("anywidget", reason="the %%gwatch cell's widget needs anywidget (pip install anywidget)")
pytest.importorskip("altair", reason="the %%gwatch cell's charts need altair (pip install altair)")

SCOPES = ["load_kv", "dot_qk", "softmax", "dot_pv"]
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    path = copy_demo(tmp_path_factory.mktemp("demo"))
    notebook = nbformat.read(path, as_version=4)
    # A cell that raises stops the run here with its traceback (CellExecutionError).
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute(env=without_gpu())
    return notebook, path.parent


def _cell(notebook, marker: str):
    """The one code cell whose source contains ``marker``."""
    found = [c for c in notebook.cells if c.cell_type == "code" and marker in c.source]
    assert len(found) == 1, f"{len(found)} code cells contain {marker!r}"
    return found[0]


def _text(cell) -> str:
    """What the cell printed and the plain-text form of what it displayed, lines' ends stripped."""
    text = "\n".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    return "\n".join(line.rstrip() for line in text.splitlines())


def test_saved_notebook_has_no_outputs():
    notebook = nbformat.read(ROOT / "notebooks" / "attention.ipynb", as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def test_every_cell_runs_in_order_without_errors(ran):
    notebook, _ = ran
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    for cell in code:
        kinds = [(o.output_type, o.get("name")) for o in cell.outputs]
        assert ("error", None) not in kinds and ("stream", "stderr") not in kinds, (cell.source, cell.outputs)


def test_no_gpu_means_the_interpreter_and_a_correct_result(ran):
    notebook, _ = ran
    assert "no GPU: the kernel runs on Triton's interpreter" in _text(_cell(notebook, "TRITON_INTERPRET"))
    printed = _text(_cell(notebook, "%%gwatch"))
    assert "gwatch: 1 launch(es) of attn_fwd, 512 scope instances on 16 warps (interpreter host time" in printed
    check = _text(_cell(notebook, "reference(q, k, v)"))
    assert "<Trace interpreter: 1 launch(es) of attn_fwd, 512 scope instances, 0 warning kind(s)>" in check
    assert float(re.search(r"max \|out - reference\| = (\S+)", check).group(1)) < 1e-4
    for scope_id, name in enumerate(SCOPES, start=100):  # tr.df.head(): the first warp's first iteration
        assert re.search(rf"^{scope_id - 100}\s+attn_fwd(\s+0){{6}}\s+{scope_id}\s+{name}\s", check, re.M), check


def test_gwatch_cell_shows_the_timeline_widget_and_the_charts(ran):
    notebook, _ = ran
    outputs = _cell(notebook, "%%gwatch").outputs
    views = [o.data[WIDGET] for o in outputs if WIDGET in o.get("data", {})]
    assert len(views) == 2  # the timeline, then the charts
    # nbclient keeps the widgets' state in the notebook: the views' models are ours.
    state = notebook.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    timeline, charts = (state[view["model_id"]]["state"] for view in views)
    assert timeline["_anywidget_id"] == "gwatch_nb.widget.TimelineWidget"
    payload = timeline["payload"]
    assert payload["tier"] == "interpreter" and payload["scopes"]["names"] == SCOPES
    assert payload["launches"][0]["instances"] == 512 and payload["launches"][0]["grid"] == [8, 2, 1]
    assert charts["_anywidget_id"] == "gwatch_nb.charts.ChartsWidget"
    spec = charts["spec"]
    assert spec["vconcat"] and all(f'"{name}"' in json.dumps(spec) for name in SCOPES)


def test_analysis_reads_the_h200_fixture_and_prints_its_tables(ran):
    notebook, _ = ran
    chosen = _text(_cell(notebook, 'tr.meta["tier"]'))
    assert "The live trace is interpreter host time" in chosen
    assert "<Trace ptx: 1 launch(es) of attn_fwd, 262144 scope instances, 0 warning kind(s)>" in chosen
    assert re.search(r"attn_fwd\s+\(32, 8, 1\)\s+\(128, 1, 1\)\s+1024\s+262144", chosen)

    stats = _text(_cell(notebook, "analysis.scope_stats"))
    for rank, (name, scope_id, total, share) in enumerate([("softmax", 102, 50326831, 0.672),
                                                           ("dot_qk", 101, 14923300, 0.199),
                                                           ("dot_pv", 103, 7382836, 0.099),
                                                           ("load_kv", 100, 2249451, 0.030)]):
        assert re.search(rf"^{rank}\s+{name}\s+{scope_id}\s+65536\s", stats, re.M), stats
        assert re.search(rf"^{rank}\s+{total}\s+{share:.3f}$", stats, re.M), stats

    per_sm = _text(_cell(notebook, "per_sm"))
    assert ("132 SMs ran warps. Busiest: SM 125, 596.7 us busy; idlest: SM 121, 197.9 us busy (3.02x)."
            in per_sm), per_sm
    assert "SMs' last warps exited between 64.5 and 96.9 us." in per_sm
    # 256 blocks on 132 SMs: 124 SMs got two, 8 got one and finished a third earlier.
    assert re.search(r"^1\s+8\s+199\.0\s+64\.9$", per_sm, re.M) and re.search(r"^2\s+124\s+591\.1\s+95\.2$", per_sm,
                                                                               re.M), per_sm

    tail = _text(_cell(notebook, "nlargest"))
    assert re.search(r"^0\s+23\s+7\s+0\s+0\s+51\s+72\s+96899\s", tail, re.M), tail  # the launch's last warp
    assert tail.count("dot_pv") >= 8  # every tail warp ended in the loop's last dot_pv
    ratios = re.search(r"tail warp / median warp:\s*\n(.*)", tail, re.S).group(1)
    assert ratios.split("\n", 1)[0].split() == ["scope", *SCOPES]
    rows = [line.split() for line in ratios.splitlines() if re.search(r"(\s+\d+\.\d+){4}$", line)]
    assert len(rows) == 8 and all(1.05 < float(row[-2]) < 1.15 for row in rows), ratios  # late from softmax

    trend = _text(_cell(notebook, "seq_trend"))
    assert "over 64 iterations" in trend
    assert re.search(r"^first\s+36\.0\s+237\.50\s+796\.0\s+88\.0$", trend, re.M), trend
    assert re.search(r"^last\s+22\.0\s+202\.00\s+502\.0\s+74\.0$", trend, re.M), trend


def test_report_and_archive_are_written(ran):
    _, folder = ran
    html = (folder / "attention_trace.html").read_text()
    assert "<script" in html and all(name in html for name in SCOPES + ["attn_fwd"])
    trace = gwatch_nb.load(folder / "attention_trace.json")
    assert trace.meta["tier"] == "interpreter" and len(trace.df) == 512 and len(trace.warps) == 16
    assert sorted(trace.df["scope"].unique()) == sorted(SCOPES)


def test_the_files_the_notebook_writes_are_ignored_by_git():
    import subprocess

    notebook = nbformat.read(ROOT / "notebooks" / "attention.ipynb", as_version=4)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    written = set(re.findall(r"\.(?:to_html|save|to_perfetto|render)\(\s*[\"']([^\"']+)[\"']", code))
    assert {"attention_trace.html", "attention_trace.json"} <= written
    for name in sorted(written):
        checked = subprocess.run(["git", "check-ignore", "-q", f"notebooks/{name}"], cwd=ROOT)
        assert checked.returncode == 0, f"notebooks/{name} (written by running the notebook) is not in .gitignore"


def test_the_stall_cell_says_where_stall_reasons_come_from(ran):
    notebook, _ = ran
    said = _text(_cell(notebook, "gwatch_nb.stalls("))
    assert said == "stall reasons come from the GPU's PC sampler, on the sass tier; this trace is interpreter"
