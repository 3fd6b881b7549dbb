"""One table of output formats, one atomic writer, one loader for both archive kinds, and
the Trace as the one owner of warp identity and of the version's whereabouts."""
import ast
import json
import os
import pathlib

import pandas as pd
import pytest

import gwatch_nb
from gwatch_nb import outputs
from gwatch_nb.cli import main
from gwatch_nb.errors import ArchiveError
from gwatch_nb.report import Report, Section
from gwatch_nb.trace import WARP_KEY

PACKAGE = pathlib.Path(gwatch_nb.__file__).parent


@pytest.fixture(scope="module")
def trace():
    return gwatch_nb.load(os.path.join(os.path.dirname(__file__), "fixtures", "matmul_h200.json"))


def _kind(path) -> str:
    text = pathlib.Path(path).read_bytes()[:200]
    if text.lstrip().lower().startswith(b"<!doctype html"):
        return "html"
    document = json.loads(pathlib.Path(path).read_text())
    return "perfetto" if "traceEvents" in document else document["format"]


@pytest.mark.parametrize("extension, kind", [(".html", "html"), (".htm", "html"), (".perfetto.json", "perfetto"),
                                             (".json", "gwatch-nb-report")])
def test_every_extension_of_the_table_renders_and_exports(trace, tmp_path, extension, kind):
    assert any(extension in f.extensions for f in outputs.FORMATS)
    report = Report("t", [Section("s", [trace])])
    assert _kind(report.render(tmp_path / f"r{extension}")) == kind
    source = tmp_path / "source.json"
    trace.save(source)
    assert main(["export", str(source), str(tmp_path / f"e{extension}")]) == 0
    assert _kind(tmp_path / f"e{extension}") == kind
    assert not list(tmp_path.glob("*.partial"))


def test_trace_writers_use_the_same_table(trace, tmp_path):
    trace.save(tmp_path / "t.json")
    trace.to_html(tmp_path / "t.html")
    trace.to_perfetto(tmp_path / "t.perfetto.json")
    assert [_kind(tmp_path / n) for n in ("t.json", "t.html", "t.perfetto.json")] == \
        ["gwatch-nb-trace", "html", "perfetto"]


def test_an_unknown_extension_names_every_format(trace, tmp_path):
    with pytest.raises(ValueError) as error:
        Report("t", [Section("s", [trace])]).render(tmp_path / "x.csv")
    for output in outputs.FORMATS:
        assert output.extensions[0] in str(error.value)
    assert not list(tmp_path.iterdir())


def test_a_failed_write_leaves_the_old_file_and_no_partial(trace, tmp_path):
    for name, write in (("x.html", lambda p: trace.to_html(p, title=3)),
                        ("x.perfetto.json", lambda p: trace.to_perfetto(p, group_by="warp"))):
        path = tmp_path / name
        path.write_text("the old file")
        with pytest.raises((TypeError, ValueError)):
            write(path)
        assert path.read_text() == "the old file"
        assert not list(tmp_path.glob("*.partial"))
    with pytest.raises(KeyboardInterrupt):
        with outputs.atomic_write(tmp_path / "x.html") as out:
            out.write(b"half a page")
            raise KeyboardInterrupt
    assert (tmp_path / "x.html").read_text() == "the old file" and not list(tmp_path.glob("*.partial"))


def test_a_folder_that_does_not_exist_is_named_as_the_user_wrote_it(trace, tmp_path, capsys):
    out = tmp_path / "nowhere" / "o.html"
    with pytest.raises(FileNotFoundError) as error:
        trace.to_html(out)
    assert error.value.filename == str(out) and ".partial" not in str(error.value)
    source = tmp_path / "source.json"
    trace.save(source)
    assert main(["export", str(source), str(out)]) == 2
    assert capsys.readouterr().err == f"gwatch: {out}: No such file or directory\n"
    (tmp_path / "taken.html").mkdir()
    with pytest.raises(IsADirectoryError) as error:  # the rename over a folder fails, not the write
        trace.to_html(tmp_path / "taken.html")
    assert error.value.filename == str(tmp_path / "taken.html") and ".partial" not in str(error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source.json", "taken.html"]


def test_load_reads_a_report_archive_too(trace, tmp_path):
    one = Report("quick start", [Section("s", [trace])]).render(tmp_path / "one.json")
    again = gwatch_nb.load(one)
    pd.testing.assert_frame_equal(again.df, trace.df)
    two = Report("t", [Section("a", [trace]), Section("b", [trace, trace])]).render(tmp_path / "three.json")
    with pytest.raises(ArchiveError) as error:
        gwatch_nb.load(two)
    assert "3 runs" in str(error.value) and "run=N" in str(error.value) and "\n" not in str(error.value)
    assert len(gwatch_nb.load(two, run=3).df) == len(trace.df)
    with pytest.raises(ArchiveError, match=r"run=4 is not a run of this file \(it holds runs 1 to 3\)"):
        gwatch_nb.load(two, run=4)
    assert len(gwatch_nb.load_report(two).sections) == 2


def test_warp_row_is_each_instance_s_warp(trace):
    merged = trace.df[list(WARP_KEY)].merge(trace.warps[list(WARP_KEY)].reset_index(), how="left", on=list(WARP_KEY))
    assert (merged["index"].to_numpy() == trace.warp_row).all()
    assert trace.launches is trace.launches and trace.warp_row is trace.warp_row


def _sources():
    return {p: p.read_text() for p in PACKAGE.rglob("*.py")}


def test_the_warp_key_is_spelled_only_in_trace_py():
    spelled = [p.name for p, text in _sources().items()
               if '"block_x", "block_y", "block_z", "warp"]' in text or "'block_x', 'block_y', 'block_z', 'warp']" in text]
    assert spelled == []


def test_nothing_reads_the_version_from_the_package_root():
    leaf = ast.parse((PACKAGE / "_version.py").read_text())
    assert not [n for n in ast.walk(leaf) if isinstance(n, (ast.Import, ast.ImportFrom))]
    for path, text in _sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and any(a.name == "__version__" for a in node.names):
                assert (node.module or "").endswith("_version"), path
    assert gwatch_nb.__version__ == __import__("gwatch_nb._version").__version__
    assert "dynamic" in (PACKAGE.parent / "pyproject.toml").read_text()


def test_one_duration_formatter_for_text_and_html(trace, tmp_path, capsys):
    from gwatch_nb.charts import duration_unit
    from gwatch_nb.units import format_ns, format_scaled
    p50 = trace.df.groupby("scope", observed=True)["duration_ns"].median()
    trace.to_html(tmp_path / "t.html")
    page = (tmp_path / "t.html").read_text()
    source = tmp_path / "t.json"
    trace.save(source)
    assert main(["show", str(source), "--outliers", "--top", "1"]) == 0
    out = capsys.readouterr().out
    longest = int(trace.df["duration_ns"].max())
    assert format_ns(longest) in out
    # The page's durations share one unit (the range unit the terminal's scope table uses too).
    unit, scale = duration_unit([trace])
    assert f"Scope statistics (durations in {unit})" in page
    for value in p50:
        assert f"<td>{format_scaled(value, scale)}</td>" in page
