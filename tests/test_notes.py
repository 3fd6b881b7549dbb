"""Every view of a trace carries the same notes (trace notes: notes.py): the widget's
payload, %%gwatch's output, the HTML report and ``gwatch show``."""
import html
import os
import re

import pytest

from conftest import FIXTURES
from gwatch_nb import load, overhead
from gwatch_nb.cli import main
from gwatch_nb.notes import notes
from gwatch_nb.serializers import timeline_payload
from gwatch_nb.trace import Trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """The H200's attention trace (what instrumenting changed is in its meta), with what an
    autotuner did and a measured tracing cost in the shapes docs/FORMAT.md gives, saved and
    loaded again as a user's file is."""
    base = load(os.path.join(FIXTURES, "attention_bn128_h200.json"))
    meta = {**base.meta,
            "autotune": {"attn_fwd": {"configs_tried": ["BLOCK_N=64", "BLOCK_N=128"], "chosen": "BLOCK_N=128",
                                      "benchmark_launches": 6, "traced": "the chosen config's launches"}},
            "overhead": overhead.measure({"attn_fwd": ([0.70, 0.71], [0.66, 0.65, 0.66])}, "replay", "unused")}
    path = tmp_path_factory.mktemp("notes") / "attention.json"
    Trace(base.records, base.scope_names, meta).save(path)
    return load(path)


def test_the_fixture_has_a_note_from_every_source(trace):
    lines = notes(trace)
    assert [line.split(" ")[0] for line in lines] == ["attn_fwd", "autotune", "tracing"]
    assert "instrumented: registers" in lines[0] and lines[-1].startswith("tracing cost: +")


def test_the_widget_payload_carries_the_notes(trace):
    assert timeline_payload(trace)["notes"] == notes(trace)


def test_the_magic_prints_the_notes(trace, capsys):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from gwatch_nb.magic import GwatchMagics
    GwatchMagics(shell=InteractiveShell.instance())._report(trace, no_widget=True)
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line.removeprefix("gwatch: ") in notes(trace)] == \
        [f"gwatch: {line}" for line in notes(trace)]


def test_the_html_report_carries_the_notes(trace, tmp_path):
    trace.to_html(tmp_path / "t.html")
    (facts,) = re.findall(r'<p class="gw-run-facts">(.*?)</p>', (tmp_path / "t.html").read_text())
    assert facts.endswith(" · ".join(html.escape(line) for line in notes(trace)))


def test_gwatch_show_prints_the_notes(trace, tmp_path, capsys):
    trace.save(tmp_path / "t.json")
    assert main(["show", str(tmp_path / "t.json"), "--stats"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line in notes(trace)] == notes(trace)
