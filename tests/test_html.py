"""HTML reports, read back as HTML: one self-contained file, several sections and runs,
names escaped, data embedded losslessly and compactly. (tests/test_browser.py opens them.)"""
import base64
import html
import zlib
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("altair", reason="HTML reports need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb import serializers  # noqa: E402
from gwatch_nb.html import render_document  # noqa: E402
from gwatch_nb.units import format_ns, format_scaled  # noqa: E402
from gwatch_nb.trace import Trace  # noqa: E402
from support.pages import Page  # noqa: E402

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def traces():
    return {name: gwatch_nb.load(f"{FIXTURES}/{name}.json")
            for name in ("matmul_h200", "attention_h200", "attention_4k_h200", "matmul_overflow_h200")}


def _renamed(trace: Trace) -> Trace:
    import dataclasses
    records = [dataclasses.replace(r, kernel=XSS) for r in trace.records]
    return Trace(records, {**trace.scope_names, 100: XSS}, {"tier": "ptx"})


def test_sections_and_runs_in_one_self_contained_file(tmp_path, traces):
    two_launches = Trace(traces["attention_h200"].records * 2, traces["attention_h200"].scope_names)
    path = tmp_path / "report.html"
    render_document("Attention vs matmul", [
        ("matmul", [traces["matmul_h200"], traces["matmul_overflow_h200"]]),
        ("attention", [two_launches]),
    ], path)
    page = Page(path.read_text(encoding="utf-8"))
    assert page.loads == []  # nothing fetched by URL: no src, no href, no link
    assert len(page.ids) == len(set(page.ids))
    assert sum(1 for tag, attrs in page.tags if tag == "section") == 2
    assert sum(1 for tag, attrs in page.tags if tag == "article") == 3
    assert len(page.timelines) == 3 and all(t in page.json for t in page.timelines)
    # Four charts a run, and a set of four per launch in the run of two launches.
    assert len(page.charts) == 16 and all(c in page.json for c in page.charts)
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    assert scripts.count({"type": "module"}) == 1  # the one inline runtime
    # The overflowing run's warning is in the page as text.
    assert "events_dropped: events did not fit" in path.read_text(encoding="utf-8")
    state = page.json[page.timelines[2]]
    assert len(state["payload"]["launches"]) == 2


def test_embedded_columns_decode_to_the_exact_payload(tmp_path, traces):
    trace = traces["attention_h200"]
    path = tmp_path / "one.html"
    trace.to_html(path)
    page = Page(path.read_text(encoding="utf-8"))
    (timeline,) = page.timelines
    embedded = page.json[timeline]["payload"]
    expected = serializers.timeline_payload(trace)
    for table in ("warps", "instances"):
        for name, column in expected[table].items():
            got = embedded[table][name]
            raw = zlib.decompress(base64.b64decode(got["view"]["$zlib_base64"]))
            assert got["dtype"] == column["dtype"] and raw == column["view"].tobytes(), (table, name)
    assert embedded["scopes"] == expected["scopes"]


def test_names_are_escaped_everywhere(tmp_path, traces):
    path = tmp_path / "xss.html"
    render_document(XSS, [(XSS, [_renamed(traces["matmul_h200"])])], path)
    text = path.read_text(encoding="utf-8")
    assert XSS not in text
    assert f"<td>{html.escape(XSS)}</td>" in text  # the statistics table shows the name as text
    assert f"<title>{html.escape(XSS)}</title>" in text
    page = Page(text)
    assert not any(tag == "img" for tag, _ in page.tags)  # no data closed its script early
    assert sum(1 for tag, _ in page.tags if tag == "script") == 1 + len(page.timelines) + len(page.charts)
    state = page.json[page.timelines[0]]
    assert state["payload"]["scopes"]["names"][0] == XSS
    assert state["payload"]["launches"][0]["kernel"] == XSS


def test_size_per_scope_instance_is_a_small_constant(tmp_path, traces):
    sizes = {}
    for name in ("attention_h200", "attention_4k_h200"):
        path = tmp_path / f"{name}.html"
        traces[name].to_html(path)
        sizes[name] = (path.stat().st_size, len(traces[name].df))
    (small, n_small), (big, n_big) = sizes["attention_h200"], sizes["attention_4k_h200"]
    per_instance = (big - small) / (n_big - n_small)
    assert per_instance < 8, f"{per_instance:.2f} bytes per scope instance"


def test_to_html_titles(tmp_path, traces):
    path = tmp_path / "t.html"
    traces["matmul_h200"].to_html(path)
    assert "<title>gwatch-nb: matmul_kernel</title>" in path.read_text(encoding="utf-8")
    traces["matmul_h200"].to_html(path, title="Tile sweep")
    assert "<h1>Tile sweep</h1>" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("title, sections, message", [
    (3, [], "title must be a string, got int"),
    ("t", "matmul", "sections must be a list of (heading, [Trace, ...]) pairs, got str"),
    ("t", [("a",)], "section 0 must be a (heading, [Trace, ...]) pair"),
    ("t", [("a", "trace")], "section 0 ('a'): expected Trace objects, got str"),
    ("t", [("a", [1])], "section 0 ('a'): expected Trace objects, got int"),
])
def test_bad_input_gets_a_one_line_error(tmp_path, title, sections, message):
    with pytest.raises(TypeError) as error:
        render_document(title, sections, tmp_path / "x.html")
    assert str(error.value) == message
    assert not (tmp_path / "x.html").exists()


def test_a_single_trace_is_not_a_list_of_traces(tmp_path, traces):
    with pytest.raises(TypeError, match=r"section 0 \('a'\): the traces must be a list of Trace"):
        render_document("t", [("a", traces["matmul_h200"])], tmp_path / "x.html")


def test_format_ns():
    assert [format_ns(v) for v in (755, 755.82, 12_345, 97_946, 1_234_567, 2.5e9)] == [
        "755 ns", "755.8 ns", "12.35 µs", "97.95 µs", "1.235 ms", "2.500 s"]
    assert format_ns(np.int64(36)) == "36 ns"
    # A column's one unit: a value far below it keeps four significant digits, not 0.000.
    assert [format_scaled(v, 1e6) for v in (4_008_000, 500_000, 20.5, 20)] == ["4.008", "0.500", "0.00002050", "0.00002000"]


class _SiteRows(HTMLParser):
    """The cells of each <tr data-site> of a page."""

    def __init__(self, text: str):
        super().__init__()
        self.rows, self._row, self._cell = {}, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "data-site" in attrs:
            self._row = self.rows.setdefault(int(attrs["data-site"]), [])
        elif tag == "td" and self._row is not None:
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag == "td" and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self._row = None


@pytest.mark.parametrize("name", ["attention_sass_h200", "attention_sass_auto_h200"])
def test_a_sass_report_lists_every_reading_and_embeds_them_for_the_details(tmp_path, name):
    trace = gwatch_nb.load(f"{FIXTURES}/{name}.json")
    path = tmp_path / "sass.html"
    trace.to_html(path)
    text = path.read_text(encoding="utf-8")
    assert "Where the readings landed (sass tier)" in text and "sharpness = own / span" in text
    rows = _SiteRows(text).rows
    sites = trace.sites
    assert sorted(rows) == sorted(sites["site"])
    dash = lambda v: "-" if pd.isna(v) else str(int(v))
    for r in sites.itertuples():
        cells = rows[r.site]
        assert cells[1:5] == [r.kind, r.origin, str(r.pair), str(r.index)]
        assert cells[5:11] == [str(r.store), dash(r.loop), dash(r.span), dash(r.own), dash(r.other_scopes),
                               dash(r.unscoped)]
        if pd.isna(r.span):
            assert cells[11] == "-"
        else:
            word, share = cells[11].split()
            assert word in ("sharp", "tight", "mixed", "blurred") and share == f"{int(100 * r.own / r.span + 0.5)}%"
    # Each scope's name and id head its first reading's row.
    firsts = {cells[0] for cells in rows.values() if cells[0]}
    assert firsts == {f"{n} [{s}]" for n, s in set(zip(sites["name"], sites["scope"]))}
    page = Page(text)
    (timeline,) = page.timelines
    assert page.json[timeline]["payload"]["sites"] == serializers.timeline_payload(trace)["sites"]


def test_a_ptx_report_has_no_sites(tmp_path, traces):
    path = tmp_path / "ptx.html"
    traces["attention_h200"].to_html(path)
    text = path.read_text(encoding="utf-8")
    assert "Where the readings landed" not in text and "data-site" not in text
    (timeline,) = Page(text).timelines
    assert "sites" not in Page(text).json[timeline]["payload"]


def test_one_duration_unit_per_page(tmp_path):
    # load_kv takes 4.008-4.458 ms, softmax up to 15 ms: each scope's own range would chart
    # load_kv in µs beside softmax in ms, and the table would give each cell its own unit.
    from support.traces import synthetic_trace
    warps = []
    for w in range(4):
        events, t = [], 0
        for scope, ns in ((1, 4_008_000 + 150_000 * w), (2, 9_000_000 + 2_000_000 * w)):
            events += [(t, scope, False), (t + ns, scope, True)]
            t += ns + 1_000
        warps.append(((w, 0, 0), 0, 0, 0, t, events))
    trace = synthetic_trace(warps, {1: "load_kv", 2: "softmax"}, grid=(4, 1, 1))
    path = tmp_path / "units.html"
    trace.to_html(path)
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    units = set()

    def walk(node):  # every "(unit)" the charts write: axis titles, tooltips, labels
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            units.update(u for u in ("ns", "µs", "ms", "s") if f"({u})" in node or f"({u}," in node)
    for chart in page.charts:
        walk(page.json[chart])
    assert units == {"ms"}
    assert "Scope statistics (durations in ms)" in text
    table = text[text.index('<table class="gw-stats">'):]
    table = table[:table.index("</table>")]
    assert "<td>4.008</td>" in table and "<td>4.458</td>" in table  # load_kv's min and max
    assert not any(f" {u}</td>" in table for u in ("ns", "µs", "ms", "s"))
