"""The comparison page of two real H200 attention runs, opened in Chromium with the network
cut off: both runs drawn on one time axis, zoom and pan move both, double-click restores,
the charts draw."""
import pytest

from support.browser import AXIS, COLOUR_SCAN, GUTTER, require_browser, rgb as _rgb

pytestmark = pytest.mark.browser

require_browser()

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb import compare  # noqa: E402
from gwatch_nb.palette import scope_colours  # noqa: E402


# The rightmost canvas column (CSS px) holding any of the colours.
RIGHTMOST = """([canvas, colours]) => {
  const { width, height, data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  const dpr = canvas.width / canvas.clientWidth;
  let best = -1;
  for (let y = 0; y < height; y++) for (let x = width - 1; x > best; x--) {
    const i = (y * width + x) * 4;
    if (colours.some(c => c[0] === data[i] && c[1] === data[i+1] && c[2] === data[i+2])) { best = x; break; }
  }
  return best / dpr;
}"""


# A checksum of the axis strip right of the gutter, and how many of its pixels are not background.
AXIS_STRIP = """([canvas, axis, gutter]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const x0 = Math.round(gutter * dpr);
  const { data } = canvas.getContext('2d').getImageData(x0, 0, canvas.width - x0, Math.round(axis * dpr));
  let sum = 0, inked = 0;
  for (let i = 0; i < data.length; i += 4) {
    sum = (sum * 31 + data[i] + 7 * data[i+1] + 13 * data[i+2]) % 1000000007;
    if (data[i] < 200) inked++;
  }
  return { sum, inked };
}"""


@pytest.fixture(scope="module")
def runs():
    return gwatch_nb.load(f"{FIXTURES}/attention_h200.json"), gwatch_nb.load(f"{FIXTURES}/attention_4k_h200.json")


@pytest.fixture(scope="module")
def page_path(runs, tmp_path_factory):
    path = tmp_path_factory.mktemp("compare") / "cmp.html"
    compare(*runs, labels=("N=1024", "N=4096")).to_html(path)
    return path


def _open(session, path):
    session.page.goto(path.as_uri())
    # Every run drawn, once there are runs: before the page has mounted them, every() of none is true.
    session.page.wait_for_function(
        "(bodies => bodies.length > 0 && bodies.every(b => Number(b.dataset.frames) >= 1))"
        "([...document.querySelectorAll('.gw-compare .gw-body')])")
    root = session.page.query_selector(".gw-compare")
    return root, root.query_selector_all("canvas")


def _colours(trace):
    return [_rgb(c) for c in scope_colours(len(trace.df["scope"].cat.categories))]


def _window(root):
    return float(root.get_attribute("data-start-ns")), float(root.get_attribute("data-ns-per-px"))


def _pixels(session, canvases):
    return [session.page.evaluate("c => c.toDataURL()", c) for c in canvases]


def _frames(session):
    return session.page.evaluate("[...document.querySelectorAll('.gw-compare .gw-body')].map(b => b.dataset.frames)")


def _wait_redrawn(session, frames):
    session.page.wait_for_function(
        "old => [...document.querySelectorAll('.gw-compare .gw-body')].every((b, i) => b.dataset.frames !== old[i])",
        arg=frames)


def test_both_runs_are_drawn_on_one_time_axis(session, runs, page_path):
    root, canvases = _open(session, page_path)
    assert len(canvases) == 2
    labels = [e.inner_text() for e in root.query_selector_all(".gw-compare-label")]
    assert labels == ["N=1024", "N=4096"]
    for trace, canvas in zip(runs, canvases):
        names = [str(n) for n in trace.df["scope"].cat.categories]
        found = session.page.evaluate(COLOUR_SCAN, [canvas, [list(c) for c in _colours(trace)]])
        # load_kv's 20 ns instances are under a pixel on a 100 µs axis; the others must show.
        for name, entry in zip(names, found):
            assert name == "load_kv" or entry["count"] > 50, f"{name} is not drawn"
    # One time axis: the same ticks over both, and nothing drawn past a run's last instance.
    axes = [session.page.evaluate(AXIS_STRIP, [c, AXIS, GUTTER]) for c in canvases]
    assert axes[0] == axes[1] and axes[0]["inked"] > 100
    start_ns, ns_per_px = _window(root)
    ends = [session.page.evaluate(RIGHTMOST, [c, [list(x) for x in _colours(t)]]) for t, c in zip(runs, canvases)]
    expected = [GUTTER + (int(t.df["end_ns"].max()) - start_ns) / ns_per_px for t in runs]
    for end, want in zip(ends, expected):
        assert want - 40 <= end <= want + 2  # the rows scrolled out of view may hold the very last instance
    assert ends[0] < GUTTER + (ends[1] - GUTTER) / 4  # 17 µs against 97 µs
    session.assert_clean()


def test_zoom_and_pan_move_both_runs_and_double_click_restores(session, page_path):
    root, canvases = _open(session, page_path)
    page = session.page
    before, window = _pixels(session, canvases), _window(root)
    canvases[0].scroll_into_view_if_needed()
    box = canvases[0].bounding_box()
    page.mouse.move(box["x"] + GUTTER + 120, box["y"] + 60)
    frames = _frames(session)
    page.mouse.wheel(0, -800)
    _wait_redrawn(session, frames)
    zoomed, zoomed_window = _pixels(session, canvases), _window(root)
    assert zoomed_window[1] < window[1] / 2
    assert all(z != b for z, b in zip(zoomed, before)), "zooming one run must redraw both"
    canvases[1].scroll_into_view_if_needed()
    other = canvases[1].bounding_box()
    frames = _frames(session)
    page.mouse.move(other["x"] + GUTTER + 400, other["y"] + 40)
    page.mouse.down()
    page.mouse.move(other["x"] + GUTTER + 250, other["y"] + 40, steps=5)
    page.mouse.up()
    _wait_redrawn(session, frames)
    panned = _window(root)
    assert panned[1] == zoomed_window[1] and panned[0] == pytest.approx(zoomed_window[0] + 150 * panned[1], rel=1e-3)
    assert all(p != z for p, z in zip(_pixels(session, canvases), zoomed))
    frames = _frames(session)
    canvases[0].scroll_into_view_if_needed()
    box = canvases[0].bounding_box()
    page.mouse.dblclick(box["x"] + GUTTER + 120, box["y"] + 12)
    _wait_redrawn(session, frames)
    assert _window(root) == window and _pixels(session, canvases) == before
    session.assert_clean()


def test_tables_and_charts_are_on_the_page(session, page_path):
    _open(session, page_path)
    page = session.page
    page.wait_for_function("document.querySelectorAll('.gw-chart-figure svg').length === 3", timeout=60000)
    verdicts = page.inner_text(".gw-compare-verdicts")
    assert "softmax: " in verdicts and "longer in N=4096 than in N=1024" in verdicts
    assert page.query_selector_all("table.gw-stats")
    session.assert_clean()
