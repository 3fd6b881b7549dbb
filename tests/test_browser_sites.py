"""The details panel of a selected instance in Chromium, on HTML reports of real H200 traces:
on the sass tier it lists the readings of the instance's scope exactly as trace.sites has
them (and the toolbar names the tier); a selection cleared, or a trace of another tier,
shows no panel."""
import math

import pandas as pd
import pytest

from support.browser import AXIS, GUTTER, require_browser

pytestmark = pytest.mark.browser

require_browser()
pytest.importorskip("altair", reason="HTML reports need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402

# The panel's table: header cells, then per row its data-site and its cells.
READ_TABLE = """panel => {
  const table = panel.querySelector('table.gw-sites');
  if (!table) return null;
  return {
    header: [...table.querySelectorAll('thead th')].map(th => th.textContent),
    rows: [...table.querySelectorAll('tbody tr')].map(tr => ({
      site: Number(tr.dataset.site), cells: [...tr.querySelectorAll('td')].map(td => td.textContent)})),
  };
}"""


def _text(value) -> str:
    return "-" if pd.isna(value) else str(int(value))


def _expected(trace, kernel: str, name: str) -> tuple[list[str], dict[int, list[str]]]:
    """The header and, per site, the cells the panel must show for scope ``name`` of ``kernel``."""
    sites = trace.sites[(trace.sites["kernel"] == kernel) & (trace.sites["name"] == name)]
    several = sites["scope"].nunique() > 1
    header = (["scope id"] if several else []) + ["kind", "origin", "pair", "at", "stores", "loop", "span", "own",
                                                  "other", "unscoped", "sharpness"]
    rows = {}
    for r in sites.itertuples():
        if pd.notna(r.span):
            share = r.own / r.span
            word = "sharp" if share == 1 else "tight" if share >= 0.9 else "mixed" if share >= 0.5 else "blurred"
            sharpness = f"{word} {math.floor(100 * share + 0.5)}%"
        else:
            sharpness = "-"
        rows[int(r.site)] = ([str(r.scope)] if several else []) + [
            r.kind, r.origin, str(r.pair), str(r.index), str(r.store), _text(r.loop), _text(r.span), _text(r.own),
            _text(r.other_scopes), _text(r.unscoped), sharpness]
    return header, rows


def _report_of(session, tmp_path, fixture: str):
    """The fixture's trace, its first kernel, and the timeline of its HTML report opened in the browser."""
    trace = gwatch_nb.load(f"{FIXTURES}/{fixture}")
    kernel = trace.launches["kernel"].iloc[0]
    path = tmp_path / "report.html"
    trace.to_html(path)
    return trace, kernel, session.open(path)


def _select_first_match(session, timeline, query: str) -> str:
    box = timeline.query_selector(".gw-search")
    box.fill(query)
    frames = session.frames(timeline)
    box.press("Enter")
    session.wait_for_frame(timeline, frames)
    selected = timeline.query_selector(".gw-selection").inner_text()
    assert selected.startswith("selected: "), selected
    return selected[len("selected: "):].split(" · ")[0]


@pytest.mark.parametrize("fixture, queries", [
    ("attention_sass_h200.json", ["load_kv", "dot_qk", "softmax", "dot_pv"]),
    ("attention_sass_auto_h200.json", ["softmax", "barrier", "loop"]),
])
def test_the_details_list_the_selected_scopes_readings(session, tmp_path, fixture, queries):
    trace, kernel, timeline = _report_of(session, tmp_path, fixture)
    assert timeline.query_selector(".gw-time-source").inner_text() == "GPU time (sass tier)"
    assert "compiled kernel (after ptxas)" in timeline.query_selector(".gw-time-source").get_attribute("title")
    panel = timeline.query_selector(".gw-details")
    assert panel.is_hidden()
    for query in queries:
        name = _select_first_match(session, timeline, query)
        assert query in name
        header, rows = _expected(trace, kernel, name)
        assert len(rows) >= 2
        assert panel.is_visible()
        assert panel.query_selector(".gw-details-title").inner_text().startswith(name)
        shown = session.page.evaluate(READ_TABLE, panel)
        assert shown["header"] == header
        assert {r["site"]: r["cells"] for r in shown["rows"]} == rows
        assert len(shown["rows"]) == len(rows)
    # A click on the time axis selects nothing: the panel goes.
    box = timeline.query_selector("canvas").bounding_box()
    frames = session.frames(timeline)
    session.page.mouse.click(box["x"] + GUTTER + 50, box["y"] + AXIS / 2)
    session.wait_for_frame(timeline, frames)
    assert timeline.query_selector(".gw-selection").inner_text() == ""
    assert panel.is_hidden()
    session.assert_clean()


def test_a_ptx_trace_shows_no_details_panel(session, tmp_path):
    trace = gwatch_nb.load(f"{FIXTURES}/attention_h200.json")
    path = tmp_path / "ptx.html"
    trace.to_html(path)
    timeline = session.open(path)
    assert timeline.query_selector(".gw-time-source").inner_text() == "GPU time"
    _select_first_match(session, timeline, "softmax")
    assert timeline.query_selector(".gw-details").is_hidden()
    session.assert_clean()


READ_STALLS = """panel => {
  const bar = panel.querySelector('.gw-stall-bar');
  if (!bar) return null;
  return {
    title: [...panel.querySelectorAll('.gw-details-title')].map(t => t.textContent),
    parts: [...bar.querySelectorAll('span')].map(s => ({reason: s.dataset.reason,
                                                         width: s.getBoundingClientRect().width})),
    bar: bar.getBoundingClientRect().width,
    legend: [...panel.querySelectorAll('.gw-stall-legend span')].map(s => s.textContent),
  };
}"""


@pytest.mark.parametrize("fixture, query", [("dot_loop_stalls_h200.json", "dot"),
                                            ("dot_loop_stalls_h200.json", "load"),
                                            ("copy_loop_stalls_h200.json", "copy"),
                                            ("fla_chunk_fwd_h_stalls_h200.json", "load_kv"),
                                            ("fla_chunk_fwd_h_stalls_h200.json", "dot"),
                                            ("vllm_decode_attention_mla_stalls_h200.json", "load_k")])
def test_the_details_show_why_the_selected_scopes_warps_stalled(session, tmp_path, fixture, query):
    trace, _, timeline = _report_of(session, tmp_path, fixture)
    name = _select_first_match(session, timeline, query)
    (kernel,) = set(trace.stalls[trace.stalls["name"] == name]["kernel"])
    panel = timeline.query_selector(".gw-details")
    assert panel.is_visible()
    shown = session.page.evaluate(READ_STALLS, panel)
    expected = trace.stalls[(trace.stalls["kernel"] == kernel) & (trace.stalls["name"] == name)]
    expected = expected.sort_values("samples", ascending=False)
    assert shown["title"][-1].startswith(f"{name}: why its warps stalled ({expected['samples'].sum():,} PC samples")
    assert [p["reason"] for p in shown["parts"]] == list(expected["reason"])
    for part, share in zip(shown["parts"], expected["share"]):  # each reason as wide as its share, to a pixel
        assert abs(part["width"] - share * shown["bar"]) <= 1.0
    top = expected.iloc[0]
    assert shown["legend"][0] == f"{top.reason} {int(100 * top.share + 0.5)}%"  # as Math.round rounds
    session.assert_clean()
