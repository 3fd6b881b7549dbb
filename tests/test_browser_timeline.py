"""The timeline in Chromium, on what a user does to it: zoomed in to tens of ns on a
collapsed launch every busy SM still draws its slices (and idle ones none), and a
double-click resets the zoom without touching the selection."""
import pytest

from support.browser import AXIS, GUTTER, HIGHLIGHT, require_browser, rgb

pytestmark = pytest.mark.browser

require_browser()
pytest.importorskip("altair", reason="HTML reports need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.palette import scope_colours  # noqa: E402

ROW = 16  # a collapsed SM row of depth-0 slices: one track and its padding (lanes.ts)

# For each canvas row y (CSS px): whether any of the colours lies right of the gutter.
ROWS_WITH_COLOUR = """([canvas, colours, ys, gutter]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const ctx = canvas.getContext('2d');
  return ys.map(y => {
    const row = ctx.getImageData(0, Math.round(y * dpr), canvas.width, 1).data;
    for (let x = Math.ceil(gutter * dpr); x < canvas.width; x++) {
      const i = 4 * x;
      if (colours.some(c => c[0] === row[i] && c[1] === row[i+1] && c[2] === row[i+2])) return true;
    }
    return false;
  });
}"""


@pytest.fixture(scope="module")
def matmul_cold():
    return gwatch_nb.load(f"{FIXTURES}/matmul_cold_h200.json")


def _zoom_to_tens_of_ns(session, timeline):
    page = session.page
    box = timeline.query_selector("canvas").bounding_box()
    page.mouse.move(box["x"] + GUTTER + (box["width"] - GUTTER) / 2, box["y"] + AXIS + 30)
    for _ in range(6):
        frames = session.frames(timeline)
        page.mouse.wheel(0, -600)
        session.wait_for_frame(timeline, frames)
    page.mouse.move(box["x"] + 5, box["y"] + 5)  # no hover outline on the canvas
    start, end = (float(timeline.get_attribute(a)) for a in ("data-view-start-ns", "data-view-end-ns"))
    return start, end, (end - start) / (box["width"] - GUTTER)


def test_zoomed_to_tens_of_ns_every_busy_collapsed_sm_draws(session, matmul_cold, tmp_path):
    path = tmp_path / "matmul_cold.html"
    matmul_cold.to_html(path)
    timeline = session.open(path)
    start, end, ns_per_px = _zoom_to_tens_of_ns(session, timeline)
    assert 20 < end - start < 100, (start, end)

    # Which SMs have a slice in the window (well inside it, or well away from it).
    df, sms = matmul_cold.df, sorted(matmul_cold.warps.sm.unique())
    margin = 2 * ns_per_px
    inside = df[(df.start_ns < end - margin) & (df.end_ns > start + margin)].sm.unique()
    near = df[(df.start_ns < end + margin) & (df.end_ns > start - margin)].sm.unique()
    busy, idle = set(inside.tolist()), set(sms) - set(near.tolist())
    assert len(busy) > 50 and idle, (len(busy), len(idle))

    page, body = session.page, timeline.query_selector(".gw-body")
    canvas = timeline.query_selector("canvas")
    colours = [list(rgb(c)) for c in scope_colours(len(df.scope.cat.categories))]
    height = page.evaluate("b => b.clientHeight", body)
    drawn, scrolled = {}, 0
    for scroll in range(0, ROW * len(sms), height - AXIS - ROW):
        frames = session.frames(timeline)
        actual = page.evaluate("([b, y]) => { b.scrollTop = y; return b.scrollTop; }", [body, scroll])
        if actual != scrolled:  # the scroll event redraws
            session.wait_for_frame(timeline, frames)
        scrolled = actual
        rows = [i for i in range(len(sms)) if AXIS <= AXIS + ROW * i - actual and AXIS + ROW * (i + 1) - actual <= height]
        ys = [AXIS + ROW * i - actual + ROW / 2 for i in rows]
        for i, has in zip(rows, page.evaluate(ROWS_WITH_COLOUR, [canvas, colours, ys, GUTTER])):
            drawn[sms[i]] = has
    assert set(drawn) == set(sms)
    empty = sorted(sm for sm in busy if not drawn[sm])
    assert not empty, f"{len(empty)} of {len(busy)} busy SMs draw nothing in [{start:.1f}, {end:.1f}] ns: {empty}"
    assert not [sm for sm in idle if drawn[sm]]
    session.assert_clean()


def test_double_click_resets_the_zoom_and_keeps_the_selection(session, matmul_cold, tmp_path):
    path = tmp_path / "matmul_cold.html"
    matmul_cold.to_html(path)
    timeline = session.open(path)
    page = session.page
    names = [str(n) for n in matmul_cold.df.scope.cat.categories]
    entry = session.scan(timeline, [rgb(c) for c in scope_colours(len(names))])[0]
    frames = session.frames(timeline)
    page.mouse.click(entry["page_x"], entry["page_y"])
    session.wait_for_frame(timeline, frames)
    selected = timeline.query_selector(".gw-selection").inner_text()
    assert selected.startswith("selected: ")
    _zoom_to_tens_of_ns(session, timeline)

    # A double-click on a slice, and one on empty time: the zoom resets, the selection stays.
    for target in ("slice", "empty"):
        box = timeline.query_selector("canvas").bounding_box()
        spot = session.scan(timeline, [rgb(c) for c in scope_colours(len(names))])[0]
        x, y = ((spot["page_x"], spot["page_y"]) if target == "slice"
                else (box["x"] + GUTTER + 3, box["y"] + box["height"] - 3))
        frames = session.frames(timeline)
        page.mouse.dblclick(x, y)
        session.wait_for_frame(timeline, frames)
        page.wait_for_timeout(100)
        assert timeline.query_selector(".gw-selection").inner_text() == selected, target
        page.mouse.move(box["x"] + 5, box["y"] + 5)
        page.wait_for_timeout(100)
        assert session.scan(timeline, [HIGHLIGHT])[0]["count"] > 0  # the selected slice's outline
        if target == "slice":
            _zoom_to_tens_of_ns(session, timeline)
    assert float(timeline.get_attribute("data-view-end-ns")) - float(timeline.get_attribute("data-view-start-ns")) \
        > 0.9 * int(matmul_cold.launches.duration_ns[0])
    session.assert_clean()
