"""Reports: several sections of several runs, rendered by extension, the .json archive
read back losslessly, and clear one-line errors for anything that is not one."""
import json

import pandas as pd
import pytest

import gwatch_nb
from gwatch_nb import ArchiveError
from gwatch_nb.outputs import format_of
from gwatch_nb.report import REPORT_FORMAT, Report, Section, load_report


@pytest.fixture
def traces(fixture_path):
    return {name: gwatch_nb.load(fixture_path(f"{name}_h200.json"))
            for name in ("matmul", "attention", "attention_causal")}


@pytest.fixture
def report(traces):
    return Report("kernels", [Section("matmul", [traces["matmul"]]),
                              Section("attention", [traces["attention"], traces["attention_causal"]])])


def test_archive_round_trip_keeps_every_run(report, tmp_path):
    path = report.render(tmp_path / "report.json")
    with open(path) as f:
        document = json.load(f)
    assert document["format"] == REPORT_FORMAT and document["version"] == 1
    assert [s["title"] for s in document["sections"]] == ["matmul", "attention"]
    assert all(run["format"] == "gwatch-nb-trace" for s in document["sections"] for run in s["runs"])

    back = load_report(path)
    assert back.title == "kernels" and [s.title for s in back.sections] == ["matmul", "attention"]
    assert [len(s.runs) for s in back.sections] == [1, 2]
    for (_, _, _, original), (_, _, _, loaded) in zip(report.runs(), back.runs()):
        pd.testing.assert_frame_equal(original.df, loaded.df)
        pd.testing.assert_frame_equal(original.warps, loaded.warps)
        assert original.meta == loaded.meta and original.scope_names == loaded.scope_names


def test_a_trace_archive_reads_as_a_one_run_report(fixture_path):
    report = load_report(fixture_path("matmul_overflow_h200.json"))
    assert report.title == "matmul_kernel"
    assert [len(s.runs) for s in report.sections] == [1]
    run = report.sections[0].runs[0]
    assert run.events_dropped == 25600 and [w.kind for w in run.warnings] == ["events_dropped"]
    assert report.run_label(0, 0) == ""


def test_render_picks_the_format_by_extension(report, tmp_path):
    assert format_of("a/trace.perfetto.json").name == "perfetto"
    assert format_of("TRACE.HTML").name == "html" and format_of("t.HTM").name == "html"
    assert format_of("t.json").name == "archive"
    with pytest.raises(ValueError, match=r"\.html.*\.json"):
        report.render(tmp_path / "trace.csv")
    perfetto = report.render(tmp_path / "trace.perfetto.json")
    with open(perfetto) as f:
        assert "traceEvents" in json.load(f)


def test_html_holds_every_section(report, tmp_path):
    pytest.importorskip("gwatch_nb.html", reason="the HTML renderer is gwatch_nb.html")
    path = report.render(tmp_path / "trace.html")
    text = open(path, encoding="utf-8").read()
    assert text.lstrip().lower().startswith("<!doctype html")
    for title in ("kernels", "matmul", "attention"):
        assert title in text


def test_misuse_is_refused_clearly(traces, tmp_path):
    with pytest.raises(TypeError, match="add_run expects a Trace"):
        Section().add_run(None)
    with pytest.raises(TypeError, match="add_section expects a Section"):
        Report().add_section(42)
    with pytest.raises(ValueError, match="no runs"):
        Report("empty", [Section("nothing")]).render(tmp_path / "empty.json")
    assert Report().add_section("named").title == "named"


def _document(report: Report) -> dict:
    return json.loads(json.dumps(report.to_document()))


@pytest.mark.parametrize("damage, message", [
    (lambda d: d.update(version=2), "report version 2 is newer"),
    (lambda d: d.update(version="1"), "bad report version"),
    (lambda d: d.update(format="something-else"), "not a gwatch-nb report or trace archive"),
    (lambda d: d.update(sections={}), "lacks a title or a sections list"),
    (lambda d: d["sections"][1].update(runs=None), "section 1 lacks a title or a runs list"),
    (lambda d: d["sections"][1]["runs"][1].update(version=7), "section 1 run 1: archive version 7 is newer"),
    (lambda d: d["sections"][0]["runs"][0]["launches"][0]["events"]["tag"].update(data="!!"),
     "section 0 run 0: launch 0 events.tag: corrupt column data"),
])
def test_damaged_reports_fail_in_one_line(report, tmp_path, damage, message):
    document = _document(report)
    damage(document)
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ArchiveError, match=message) as error:
        load_report(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_unreadable_files_fail_in_one_line(tmp_path):
    for path, message in ((tmp_path / "missing.json", "cannot read"), (tmp_path, "cannot read")):
        with pytest.raises(ArchiveError, match=message):
            load_report(path)
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 1000 + "0]")
    with pytest.raises(ArchiveError, match="archive limit"):
        load_report(big, max_bytes=100)
    with pytest.raises(ArchiveError, match="not a gwatch-nb report or trace archive"):
        load_report(_write(tmp_path / "list.json", "[1, 2]"))
    with pytest.raises(ArchiveError, match="invalid JSON"):
        load_report(_write(tmp_path / "half.json", '{"format": "gwatch-nb-report", "sec'))


def _write(path, text):
    path.write_text(text)
    return path
