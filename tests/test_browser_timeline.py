"""The timeline in Chromium, on what a user does to it: zoomed in to tens of ns on a
collapsed launch every busy SM still draws its slices (and idle ones none), and a
double-click resets the zoom without touching the selection."""
import numpy as np
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


# Per x (CSS px): the indices of the colours found in the canvas column between y0 and y1.
COLOURS_IN_COLUMN = """([canvas, colours, xs, y0, y1]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const ctx = canvas.getContext('2d');
  const top = Math.round(y0 * dpr), height = Math.round((y1 - y0) * dpr);
  return xs.map(x => {
    const column = ctx.getImageData(Math.round(x * dpr), top, 1, height).data;
    const found = new Set();
    for (let k = 0; k < height; k++) {
      const i = 4 * k;
      colours.forEach((c, n) => { if (c[0] === column[i] && c[1] === column[i+1] && c[2] === column[i+2]) found.add(n); });
    }
    return [...found];
  });
}"""


def test_sass_scopes_that_overlap_are_both_drawn_in_their_warp(session, tmp_path):
    # On the sass tier dot_pv is still running when softmax starts (ptxas interleaved them):
    # each gets a sub-row of its own, so where they overlap the warp's band shows both.
    trace = gwatch_nb.load(f"{FIXTURES}/attention_sass_h200.json")
    path = tmp_path / "attention_sass.html"
    trace.to_html(path)
    timeline = session.open(path)
    page, canvas = session.page, timeline.query_selector("canvas")
    box = canvas.bounding_box()

    # Expand the first SM (the launch opens with its SMs collapsed): its block, then its warps.
    warps = trace.warps
    sm = int(warps.sm.min())
    mine = warps[warps.sm == sm].sort_values(["block_z", "block_y", "block_x", "warp"])
    assert len(mine[["block_x", "block_y", "block_z"]].drop_duplicates()) == 1
    frames = session.frames(timeline)
    page.mouse.click(box["x"] + 20, box["y"] + AXIS + 9)
    session.wait_for_frame(timeline, frames)
    page.mouse.move(box["x"] + 5, box["y"] + 5)
    page.wait_for_timeout(100)

    # Rows from lanes.ts: the SM and block headers (18 px), then each warp, 14 px per depth + 2.
    df = trace.df
    warp_row = trace.warp_row
    names = [str(n) for n in df.scope.cat.categories]
    colours = [list(rgb(c)) for c in scope_colours(len(names))]
    softmax, dot_pv = names.index("softmax"), names.index("dot_pv")
    start, end = (float(timeline.get_attribute(a)) for a in ("data-view-start-ns", "data-view-end-ns"))
    ns_per_px = (end - start) / (box["width"] - GUTTER)
    top = AXIS + 2 * 18
    checked = 0
    for row in mine.index:
        instances = df[warp_row == row]
        height = 14 * (int(instances.depth.max()) + 1) + 2
        s = instances[instances.scope == "softmax"].set_index("seq")
        p = instances[instances.scope == "dot_pv"].set_index("seq")
        both = s.add_suffix("_s").join(p.add_suffix("_p"), how="inner")
        lo = np.maximum(both.start_ns_s, both.start_ns_p)
        hi = np.minimum(both.end_ns_s, both.end_ns_p)
        wide = (hi - lo) / ns_per_px > 8  # overlaps wide enough to hit in the middle
        assert wide.sum() >= 5, row
        xs = (GUTTER + ((lo + hi)[wide] / 2 - start) / ns_per_px).tolist()
        found = page.evaluate(COLOURS_IN_COLUMN, [canvas, colours, xs, top + 1, top + height - 1])
        missing = [x for x, f in zip(xs, found) if not {softmax, dot_pv} <= set(f)]
        assert not missing, f"warp row {row}: softmax or dot_pv hidden at x = {missing}"
        checked += len(xs)
        top += height
    assert checked >= 20
    session.assert_clean()
