"""Exported HTML reports of real H200 traces, opened in Chromium with the network cut off:
what the canvas draws (pixels), what the pointer does, and that names stay text."""
import dataclasses

import pytest

from support.browser import AXIS, COLOUR_RUNS, GUTTER, HIGHLIGHT, require_browser, rgb

pytestmark = pytest.mark.browser

require_browser()
pytest.importorskip("altair", reason="HTML reports need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.html import render_document  # noqa: E402
from gwatch_nb.palette import scope_colours  # noqa: E402
from gwatch_nb.trace import Trace  # noqa: E402
from support.traces import long_loop_trace, nested_trace  # noqa: E402

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def attention():
    return gwatch_nb.load(f"{FIXTURES}/attention_h200.json")


@pytest.fixture(scope="module")
def attention_html(attention, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "attention.html"
    attention.to_html(path)
    return path


def _scope_colours(trace):
    names = [str(n) for n in trace.df["scope"].cat.categories]
    return names, [rgb(c) for c in scope_colours(len(names))]


def test_canvas_shows_every_scope_colour(session, attention, attention_html):
    timeline = session.open(attention_html)
    names, colours = _scope_colours(attention)
    found = session.scan(timeline, colours)
    for name, entry in zip(names, found):
        assert entry["count"] > 50, f"scope {name} is not drawn"
    legend = [e.inner_text() for e in timeline.query_selector_all(".gw-legend-item")]
    assert legend == names
    assert "GPU time" in timeline.query_selector(".gw-time-source").inner_text()
    session.assert_clean()


def test_wheel_zoom_changes_what_is_drawn_and_double_click_restores(session, attention_html):
    timeline = session.open(attention_html)
    page = session.page
    before = session.pixels(timeline)
    box = timeline.query_selector("canvas").bounding_box()
    page.mouse.move(box["x"] + GUTTER + 300, box["y"] + AXIS + 40)
    frames = session.frames(timeline)
    page.mouse.wheel(0, -600)
    session.wait_for_frame(timeline, frames)
    zoomed = session.pixels(timeline)
    assert zoomed != before
    frames = session.frames(timeline)
    page.mouse.dblclick(box["x"] + GUTTER + 300, box["y"] + AXIS / 2)  # on the axis: no slice to select
    session.wait_for_frame(timeline, frames)
    page.mouse.move(box["x"] + 5, box["y"] + 5)  # no hover highlight in the comparison
    page.wait_for_timeout(100)
    assert session.pixels(timeline) == before
    session.assert_clean()


def test_hover_shows_the_tooltip_of_the_bar_under_the_pointer(session, attention, attention_html):
    timeline = session.open(attention_html)
    names, colours = _scope_colours(attention)
    page = session.page
    for name, entry in zip(names, session.scan(timeline, colours)):
        page.mouse.move(entry["page_x"], entry["page_y"])
        tooltip = timeline.query_selector(".gw-tooltip")
        page.wait_for_function("t => !t.hidden", arg=tooltip)
        assert tooltip.query_selector(".gw-tooltip-title").inner_text() == name
        text = tooltip.inner_text()
        for part in ("block (", "warp ", "SM ", "start ", "duration ", f"of {name} in this warp"):
            assert part in text
    page.mouse.move(5, 5)
    page.wait_for_function("t => t.hidden", arg=timeline.query_selector(".gw-tooltip"))
    session.assert_clean()


def test_click_selects_an_instance(session, attention, attention_html):
    timeline = session.open(attention_html)
    names, colours = _scope_colours(attention)
    entry = session.scan(timeline, colours)[names.index("softmax")]
    assert session.scan(timeline, [HIGHLIGHT])[0]["count"] == 0
    frames = session.frames(timeline)
    session.page.mouse.click(entry["page_x"], entry["page_y"])
    session.wait_for_frame(timeline, frames)
    assert timeline.query_selector(".gw-selection").inner_text().startswith("selected: softmax · block (")
    assert session.scan(timeline, [HIGHLIGHT])[0]["count"] > 20  # the selected slice's outline
    session.assert_clean()


def test_clicking_a_group_label_expands_it(session, attention_html):
    timeline = session.open(attention_html)
    box = timeline.query_selector("canvas").bounding_box()
    body = timeline.query_selector(".gw-body")
    height = session.page.evaluate("b => b.scrollHeight", body)
    frames = session.frames(timeline)
    session.page.mouse.click(box["x"] + 30, box["y"] + AXIS + 8)
    session.wait_for_frame(timeline, frames)
    assert session.page.evaluate("b => b.scrollHeight", body) > height  # its blocks and warps now have rows
    session.assert_clean()


def test_level_of_detail_keeps_the_longest_slices(session, tmp_path):
    # 5,000 instances in one warp, 64 ns buckets at this width: about three slices share a
    # bucket, and each of the ten 2 µs "long" slices must win its bucket and stay visible.
    path = tmp_path / "loop.html"
    long_loop_trace(iterations=5000, long_every=500).to_html(path)
    timeline = session.open(path)
    short, long = [rgb(c) for c in scope_colours(2)]
    canvas = timeline.query_selector("canvas")
    found = session.scan(timeline, [short, long])
    assert found[0]["count"] > 0
    assert session.page.evaluate(COLOUR_RUNS, [canvas, list(long), found[1]["y"]]) == 10
    session.assert_clean()


def test_names_show_as_text_and_never_run(session, tmp_path):
    matmul = gwatch_nb.load(f"{FIXTURES}/matmul_h200.json")
    records = [dataclasses.replace(r, kernel=XSS) for r in matmul.records]
    named = Trace(records, {**matmul.scope_names, 101: XSS}, {"tier": "ptx"})
    path = tmp_path / "xss.html"
    render_document(XSS, [(XSS, [named])], path)
    timeline = session.open(path)
    page = session.page
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.title() == XSS
    assert page.inner_text("h1") == XSS and page.inner_text("h2") == XSS
    legend = [e.inner_text() for e in timeline.query_selector_all(".gw-legend-item")]
    assert XSS in legend
    assert timeline.query_selector(".gw-status").inner_text().startswith(XSS)
    assert XSS in [td.inner_text() for td in page.query_selector_all(".gw-stats td")]
    # The bar of the renamed scope: its tooltip names it, as text.
    names, colours = _scope_colours(named)
    entry = session.scan(timeline, colours)[names.index(XSS)]
    page.mouse.move(entry["page_x"], entry["page_y"])
    page.wait_for_function("t => !t.hidden", arg=timeline.query_selector(".gw-tooltip"))
    assert timeline.query_selector(".gw-tooltip-title").inner_text() == XSS
    # The charts draw it as SVG text.
    page.wait_for_function("document.querySelectorAll('[data-gw-chart] svg').length === 4")
    assert page.evaluate("name => [...document.querySelectorAll('[data-gw-chart] svg text')]"
                         ".some(t => t.textContent === name)", XSS)
    session.assert_clean()


def test_sections_runs_launches_and_charts_all_work(session, tmp_path, attention):
    matmul = gwatch_nb.load(f"{FIXTURES}/matmul_overflow_h200.json")
    two_launches = Trace(attention.records * 2, attention.scope_names)
    nested = nested_trace()
    path = tmp_path / "report.html"
    render_document("Report", [("A", [matmul, two_launches]), ("B", [nested])], path)
    session.open(path)
    page = session.page
    # The charts of launch 1 of the two-launch run stay hidden until the picker asks for them.
    assert len(page.query_selector_all(".gw-charts[hidden] [data-gw-chart]")) == 4
    for mount in page.query_selector_all("[data-gw-timeline], .gw-charts:not([hidden]) [data-gw-chart]"):
        mount.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelectorAll('.gw-timeline').length === 3")
    page.wait_for_function("document.querySelectorAll('[data-gw-chart] svg').length === 12")
    timelines = page.query_selector_all(".gw-timeline")
    for timeline in timelines:
        page.wait_for_function("el => el.dataset.frames >= 1", arg=timeline)

    # The run with two launches offers both; picking one redraws that launch.
    select = timelines[1].query_selector("select")
    assert [o.inner_text() for o in select.query_selector_all("option")][1].startswith("1: attn_fwd")
    frames = session.frames(timelines[1])
    select.select_option("1")
    session.wait_for_frame(timelines[1], frames)

    # Interpreter time is labelled as host time; nested scopes draw one track lower.
    assert "not GPU time" in timelines[2].query_selector(".gw-time-source").inner_text()
    outer, inner = session.scan(timelines[2], [rgb(c) for c in scope_colours(2)])
    assert outer["count"] and inner["count"]
    assert min(inner["ys"]) > min(outer["ys"]) and max(inner["ys"]) > max(outer["ys"])
    session.assert_clean()


def test_the_header_states_the_launch_config_and_what_tracing_cost(session, attention, tmp_path):
    from gwatch_nb import launch_config, overhead
    config = launch_config.make({"BLOCK_M": 128, "BLOCK_N": 64}, {"num_warps": 4, "num_stages": 3, "num_ctas": 1})
    cost = overhead.measure({"attn": ([0.70, 0.71], [0.66, 0.65, 0.66])}, "replay", "unused")
    trace = Trace([dataclasses.replace(r, info={**r.info, "config": config}) for r in attention.records],
                            attention.scope_names, {**attention.meta, "overhead": cost})
    trace.to_html(tmp_path / "t.html")
    timeline = session.open(tmp_path / "t.html")
    assert timeline.query_selector(".gw-status").inner_text().endswith(" · " + launch_config.label(config))
    notes = timeline.query_selector(".gw-notes")
    assert notes.inner_text() == f"tracing cost: {cost['slowdown_pct']:+.1f}% kernel time"
    assert notes.get_attribute("title") == overhead.summary(cost)
    session.assert_clean()
