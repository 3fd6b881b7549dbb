"""The tracing-session protocol on the interpreter tier, end to end: "auto" decided by
do_trace, session problems as Trace.warnings in every view, G-Watch's do_trace forms
(run by tests/test_interpreter_process.py in a process started with TRITON_INTERPRET=1)."""
import json
import warnings

import pytest
import torch

from corpus_kernels import basics
from gwatch_nb import GwatchWarning, do_trace, load
from gwatch_nb.cli import main as gwatch_cli
from gwatch_nb.interpreter import InterpreterRecorder
from gwatch_nb.options import TraceOptions
from gwatch_nb.serializers import timeline_payload
from gwatch_nb.tiers import TracingSession

N = 3000


def _both_vector_adds():
    x, y = torch.randn(N), torch.randn(N)
    out = torch.empty_like(x)
    grid = (-(-N // basics.VECTOR_BLOCK),)
    basics.vector_add_marked[grid](x, y, out, N, BLOCK=basics.VECTOR_BLOCK)
    basics.vector_add[grid](x, y, out, N, BLOCK=basics.VECTOR_BLOCK)
    return out


def test_the_recorder_implements_the_protocol():
    recorder = InterpreterRecorder(TraceOptions("vector_add", "interpreter"))
    assert isinstance(recorder, TracingSession) and recorder.tier == "interpreter"
    recorder.start()
    try:
        _both_vector_adds()
    finally:
        recorder.stop()
    recorder.stop()  # twice is harmless
    assert recorder.launched == {"vector_add_marked": 1, "vector_add": 1}
    assert [r.kernel for r in recorder.records()] == ["vector_add_marked"]
    assert [(p.kind, p.kernel) for p in recorder.problems()] == [("markers_not_found", "vector_add")]
    assert recorder.interrupted is False and list(recorder.meta()) == ["overhead"]
    assert recorder.meta()["overhead"]["measured"] is False  # host time: never a tracing-cost figure


def test_auto_is_decided_by_do_trace():
    trace = do_trace(_both_vector_adds, r"^vector_add_marked$", scope_name_map=basics.VECTOR_ADD_SCOPES,
                     instrumentation_tier="auto")
    assert trace.meta["tier"] == "interpreter"  # no GPU here
    assert set(trace.df.scope) == {"load", "store"}


def test_session_problems_are_warnings_every_view_shows(tmp_path, capsys):
    with pytest.warns(GwatchWarning, match=r"markers_not_found: vector_add: matched, but it has no scope_start"):
        trace = do_trace(_both_vector_adds, r"vector_add", scope_name_map=basics.VECTOR_ADD_SCOPES,
                         instrumentation_tier="interpreter")
    assert [(w.kind, w.count) for w in trace.warnings] == [("markers_not_found", 1)]
    assert trace.meta["problems"] == [{"kind": "markers_not_found", "kernel": "vector_add",
                                       "message": "vector_add: matched, but it has no scope_start/scope_end markers"}]
    archive = tmp_path / "trace.json"
    trace.save(archive)
    assert [str(w) for w in load(archive).warnings] == [str(w) for w in trace.warnings]
    html = tmp_path / "trace.html"
    trace.to_html(html)
    assert "markers_not_found: vector_add: matched" in html.read_text()
    assert gwatch_cli(["show", str(archive)]) == 0
    assert "! markers_not_found: vector_add: matched" in capsys.readouterr().out
    trace.to_perfetto(tmp_path / "trace.perfetto.json")
    (run,) = json.loads((tmp_path / "trace.perfetto.json").read_text())["metadata"]["gwatch-nb"]["runs"]
    assert run["warnings"] == [str(w) for w in trace.warnings]
    assert timeline_payload(trace)["warnings"] == [str(w) for w in trace.warnings]  # what the widget lists


def test_g_watch_positional_form_with_warmup_rep_and_dump_path(tmp_path):
    from gwatch.cuda.trace import do_trace as g_watch_do_trace
    runs = []

    def run():
        runs.append(1)
        x, y = torch.randn(N), torch.randn(N)
        basics.vector_add_marked[(-(-N // basics.VECTOR_BLOCK),)](x, y, torch.empty_like(x), N,
                                                                   BLOCK=basics.VECTOR_BLOCK)

    dump = tmp_path / "vector_add_trace.gwatch"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean trace warns of nothing
        trace = g_watch_do_trace(run, 2, 3, r"^vector_add_marked$", basics.VECTOR_ADD_SCOPES, dump_path=str(dump),
                                 instrumentation_tier="interpreter")
    assert len(runs) == 2 + 3
    assert len(trace.launches) == 3  # the warmup runs were not traced
    assert set(trace.df.scope) == {"load", "store"}
    assert json.loads(dump.read_text())["format"] == "gwatch-nb-trace"
    assert len(load(dump).launches) == 3


def test_g_watch_documented_keyword_form_and_both_spellings():
    import gwatch.cuda.trace as trace_face
    import gwatch.cuda.trace.triton as gw_trace
    import gwatch.cuda.xtrace as xtrace_face
    import gwatch.cuda.xtrace.triton as gw_xtrace
    from gwatch.cuda.trace.format import Section_IntraKernelTrace
    from gwatch.cuda.xtrace.format import Section_IntraKernelTrace as older
    assert xtrace_face.do_trace is trace_face.do_trace and older is Section_IntraKernelTrace
    assert gw_trace.scope_start is gw_xtrace.scope_start is basics.scope_start
    result = trace_face.do_trace(fn=_both_vector_adds, kernel_name_pattern=r"^vector_add_marked$", dsl="triton",
                                 scope_name_map=basics.VECTOR_ADD_SCOPES, instrumentation_tier="interpreter")
    assert set(result.df.scope) == {"load", "store"}
    with pytest.raises(ValueError, match=r"name_id_map=\{1: 'a'\} and scope_name_map both name the scopes"):
        trace_face.do_trace(_both_vector_adds, kernel_name_pattern="v", name_id_map={1: "a"},
                            scope_name_map={1: "a"}, instrumentation_tier="interpreter")
    with pytest.raises(ValueError, match=r"kernel_name_pattern=None is required"):
        trace_face.do_trace(_both_vector_adds, 0, 1, instrumentation_tier="interpreter")
