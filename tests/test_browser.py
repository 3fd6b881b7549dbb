"""Exported HTML reports of real H200 traces, opened in Chromium with the network cut off:
what the canvas draws (pixels), what the pointer does, and that names stay text."""
import dataclasses
import os
import shutil

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("GWATCH_CHROMIUM", "/usr/bin/chromium")
if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need playwright (pip install playwright)")
pytest.importorskip("altair", reason="HTML reports need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.html import render_document  # noqa: E402
from gwatch_nb.serializers import scope_colours  # noqa: E402
from gwatch_nb.trace import Trace  # noqa: E402
from test_widget import _long_loop_trace, _nested_trace  # noqa: E402

XSS = "<img src=x onerror=alert(1)>"
GUTTER, AXIS, HIGHLIGHT = 180, 24, (0xd6, 0x33, 0x6c)

# Per colour (r, g, b): how many canvas pixels have it, and the centre of its widest run.
COLOUR_SCAN = """([canvas, colours]) => {
  const ctx = canvas.getContext('2d');
  const { width, height, data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
  const dpr = canvas.width / canvas.clientWidth;
  const out = colours.map(() => ({ count: 0, best: 0, x: -1, y: -1, ys: [] }));
  for (let y = 0; y < height; y++) {
    let run = -1, runStart = 0;
    for (let x = 0; x <= width; x++) {
      const i = (y * width + x) * 4;
      const k = x < width ? colours.findIndex(c => c[0] === data[i] && c[1] === data[i+1] && c[2] === data[i+2]) : -1;
      if (k >= 0) { out[k].count++; if (!out[k].ys.includes(Math.floor(y / dpr))) out[k].ys.push(Math.floor(y / dpr)); }
      if (k !== run) {
        if (run >= 0 && x - runStart > out[run].best) {
          out[run].best = x - runStart; out[run].x = (runStart + x) / 2 / dpr; out[run].y = y / dpr;
        }
        run = k; runStart = x;
      }
    }
  }
  return out;
}"""


# How many separate runs of one colour a pixel row of the canvas holds.
COLOUR_RUNS = """([canvas, colour, y]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const row = canvas.getContext('2d').getImageData(0, Math.round(y * dpr), canvas.width, 1).data;
  let runs = 0, inside = false;
  for (let x = 0; x < canvas.width; x++) {
    const hit = row[4*x] === colour[0] && row[4*x+1] === colour[1] && row[4*x+2] === colour[2];
    if (hit && !inside) runs++;
    inside = hit;
  }
  return runs;
}"""


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


class Session:
    """One page with every non-file request aborted and recorded, and console errors,
    page errors and dialogs (alert!) recorded."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.blocked, self.errors, self.dialogs = [], [], []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _route(self, route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path):
        self.page.goto(path.as_uri())
        self.page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1")
        return self.page.query_selector(".gw-timeline")

    def frames(self, timeline) -> int:
        return int(timeline.get_attribute("data-frames"))

    def wait_for_frame(self, timeline, after: int) -> None:
        self.page.wait_for_function("([el, n]) => Number(el.dataset.frames) > n", arg=[timeline, after])

    def scan(self, timeline, colours):
        canvas = timeline.query_selector("canvas")
        found = self.page.evaluate(COLOUR_SCAN, [canvas, [list(c) for c in colours]])
        box = canvas.bounding_box()
        for entry in found:
            entry["page_x"], entry["page_y"] = box["x"] + entry["x"], box["y"] + entry["y"]
        return found

    def pixels(self, timeline) -> str:
        return self.page.evaluate("c => c.toDataURL()", timeline.query_selector("canvas"))

    def assert_clean(self):
        assert self.blocked == [], f"the page tried the network: {self.blocked}"
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield browser
        browser.close()


@pytest.fixture
def session(browser):
    s = Session(browser)
    yield s
    s.context.close()


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
    return names, [_rgb(c) for c in scope_colours(len(names))]


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
    _long_loop_trace(iterations=5000, long_every=500).to_html(path)
    timeline = session.open(path)
    short, long = [_rgb(c) for c in scope_colours(2)]
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
    nested = _nested_trace()
    path = tmp_path / "report.html"
    render_document("Report", [("A", [matmul, two_launches]), ("B", [nested])], path)
    session.open(path)
    page = session.page
    for mount in page.query_selector_all("[data-gw-timeline], [data-gw-chart]"):
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
    outer, inner = session.scan(timelines[2], [_rgb(c) for c in scope_colours(2)])
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
