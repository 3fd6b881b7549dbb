"""The timeline's tools in Chromium, on a real H200 trace: the legend hides and shows a
scope, the search counts and jumps to its matches, W/A/S/D zoom and pan as the wheel and a
drag do, and shift+drag measures time with a ruler."""
import math
import re

import pytest

from support.browser import AXIS, GUTTER, HIGHLIGHT, require_browser, rgb

pytestmark = pytest.mark.browser

require_browser()
pytest.importorskip("altair", reason="HTML reports need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.palette import scope_colours  # noqa: E402

WHEEL_NOTCH = 0.002  # timeline.ts: a pixel-mode wheel delta of d zooms by exp(d * 0.002)
KEY_ZOOM, KEY_PAN_SHARE = 1.25, 0.2  # timeline.ts
UNIT_NS = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}
# What the footer says of a ruler: its duration (4 significant digits), then its ends in exact ns.
RULER_TEXT = re.compile(r"ruler: ([\d.]+) (ns|µs|ms|s) \(([\d,]+) ns → ([\d,]+) ns\)")


@pytest.fixture(scope="module")
def matmul():
    return gwatch_nb.load(f"{FIXTURES}/matmul_h200.json")  # 512 warps: its SMs open collapsed


@pytest.fixture
def timeline(session, matmul, tmp_path):
    path = tmp_path / "matmul.html"
    matmul.to_html(path)
    return session.open(path)


def _window(timeline):
    return tuple(float(timeline.get_attribute(a)) for a in ("data-view-start-ns", "data-view-end-ns"))


def _act(session, timeline, action):
    """Do something that redraws, and wait for the frame it asks for."""
    frames = session.frames(timeline)
    action()
    session.wait_for_frame(timeline, frames)


def test_legend_hides_a_scope_and_shows_it_again(session, matmul, timeline):
    names = [str(n) for n in matmul.df.scope.cat.categories]
    colours = [rgb(c) for c in scope_colours(len(names))]
    session.page.mouse.move(1, 1)
    before = session.pixels(timeline)
    assert all(entry["count"] > 0 for entry in session.scan(timeline, colours))

    item = timeline.query_selector(f".gw-legend-item:has-text('{names[1]}')")
    _act(session, timeline, item.click)
    counts = [entry["count"] for entry in session.scan(timeline, colours)]
    assert counts[1] == 0 and counts[0] > 0 and counts[2] > 0, counts
    assert item.get_attribute("aria-pressed") == "false" and "gw-legend-off" in item.get_attribute("class")

    _act(session, timeline, item.click)
    assert item.get_attribute("aria-pressed") == "true"
    assert session.pixels(timeline) == before
    session.assert_clean()


@pytest.mark.parametrize("query, keep", [
    ("dot", lambda df: df.scope == "dot"),
    ("LOA", lambda df: df.scope == "load"),
    ("sm 12", lambda df: df.sm == 12),
    ("block 3,2", lambda df: (df.block_x == 3) & (df.block_y == 2) & (df.block_z == 0)),
    ("store block (5, 1) warp 2", lambda df: (df.scope == "store") & (df.block_x == 5) & (df.block_y == 1)
                                             & (df.warp == 2)),
])
def test_search_counts_its_matches(session, matmul, timeline, query, keep):
    df = matmul.df[matmul.df.launch == 0]
    expected = int(keep(df).sum())
    assert expected > 0
    box = timeline.query_selector(".gw-search")
    _act(session, timeline, lambda: box.fill(query))
    assert timeline.get_attribute("data-matches") == str(expected)
    assert timeline.query_selector(".gw-search-count").inner_text() == f"{expected:,} match{'' if expected == 1 else 'es'}"
    session.assert_clean()


def test_search_fades_what_it_does_not_match_and_says_what_it_cannot_read(session, matmul, timeline):
    colours = [rgb(c) for c in scope_colours(3)]
    session.page.mouse.move(1, 1)
    box = timeline.query_selector(".gw-search")
    _act(session, timeline, lambda: box.fill("store"))
    counts = [entry["count"] for entry in session.scan(timeline, colours)]
    assert counts[2] > 0 and counts[0] == counts[1] == 0, counts  # load and dot drawn faded, not in their colour

    _act(session, timeline, lambda: box.fill("warp"))
    assert timeline.query_selector(".gw-search-count").inner_text() == 'warp needs a number, e.g. "warp 3"'
    assert all(entry["count"] > 0 for entry in session.scan(timeline, colours))  # nothing faded
    _act(session, timeline, lambda: box.press("Escape"))
    assert box.input_value() == "" and timeline.query_selector(".gw-search-count").inner_text() == ""
    session.assert_clean()


def test_enter_jumps_to_each_match_in_start_order(session, matmul, timeline):
    df = matmul.df[matmul.df.launch == 0]
    matches = df[(df.scope == "dot") & (df.sm == 12)].reset_index().sort_values(["start_ns", "index"])
    box = timeline.query_selector(".gw-search")
    _act(session, timeline, lambda: box.fill("dot sm 12"))
    session.page.mouse.move(1, 1)
    for k in range(3):
        _act(session, timeline, lambda: box.press("Enter"))
        row = matches.iloc[k]
        assert timeline.query_selector(".gw-search-count").inner_text() == f"{k + 1} of {len(matches)} matches"
        selected = timeline.query_selector(".gw-selection").inner_text()
        assert selected.startswith(f"selected: dot · block ({row.block_x}, {row.block_y}, {row.block_z}) "
                                   f"warp {row.warp} · SM 12 · start "), selected
        start, end = _window(timeline)
        assert math.isclose((start + end) / 2, (row.start_ns + row.end_ns) / 2, rel_tol=1e-9, abs_tol=1e-6)
        assert 1.25 * (row.end_ns - row.start_ns) <= end - start <= 20 * (row.end_ns - row.start_ns) + 1e-6
        # SM 12 opened: the selected slice's outline is on screen.
        assert session.scan(timeline, [HIGHLIGHT])[0]["count"] > 0
    _act(session, timeline, lambda: box.press("Shift+Enter"))
    assert timeline.query_selector(".gw-search-count").inner_text() == f"2 of {len(matches)} matches"
    session.assert_clean()


def _focus_canvas(session, timeline):
    """A click on the time axis: focuses the canvas, selects nothing; then the pointer leaves."""
    box = timeline.query_selector("canvas").bounding_box()
    _act(session, timeline, lambda: session.page.mouse.click(box["x"] + GUTTER + 50, box["y"] + AXIS / 2))
    session.page.mouse.move(1, 1)
    return box


def test_w_and_s_zoom_about_the_centre_a_and_d_pan(session, timeline):
    page = session.page
    _focus_canvas(session, timeline)
    whole = _window(timeline)

    _act(session, timeline, lambda: page.keyboard.press("w"))
    start, end = _window(timeline)
    assert math.isclose(end - start, (whole[1] - whole[0]) / KEY_ZOOM, rel_tol=1e-9)
    assert math.isclose(start + end, whole[0] + whole[1], rel_tol=1e-9)
    _act(session, timeline, lambda: page.keyboard.press("w"))
    zoomed = _window(timeline)

    _act(session, timeline, lambda: page.keyboard.press("d"))
    start, end = _window(timeline)
    shift = KEY_PAN_SHARE * (zoomed[1] - zoomed[0])
    assert math.isclose(start, zoomed[0] + shift, rel_tol=1e-9) and math.isclose(end - start, zoomed[1] - zoomed[0])
    _act(session, timeline, lambda: page.keyboard.press("a"))
    assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) for a, b in zip(_window(timeline), zoomed))

    _act(session, timeline, lambda: page.keyboard.press("s"))
    _act(session, timeline, lambda: page.keyboard.press("s"))
    assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) for a, b in zip(_window(timeline), whole))
    session.assert_clean()


def test_w_under_the_pointer_zooms_as_the_wheel_does(session, timeline):
    page = session.page
    box = _focus_canvas(session, timeline)
    x, y = box["x"] + GUTTER + 0.3 * (box["width"] - GUTTER), box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    _act(session, timeline, lambda: page.mouse.wheel(0, -math.log(KEY_ZOOM) / WHEEL_NOTCH))
    by_wheel = _window(timeline)
    _act(session, timeline, lambda: page.mouse.dblclick(x, y))  # back to the whole launch
    _act(session, timeline, lambda: page.keyboard.press("w"))
    assert all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-3) for a, b in zip(_window(timeline), by_wheel))
    session.assert_clean()


def test_shift_drag_measures_and_escape_or_a_click_clears(session, timeline):
    page = session.page
    box = timeline.query_selector("canvas").bounding_box()
    window = _window(timeline)
    ns_per_px = (window[1] - window[0]) / (box["width"] - GUTTER)
    x0, x1, y = box["x"] + GUTTER + 100, box["x"] + GUTTER + 400, box["y"] + AXIS + 40

    def measure(start=x0):
        page.mouse.move(start, y)
        page.keyboard.down("Shift")
        page.mouse.down()
        page.mouse.move(x1, y, steps=5)
        page.mouse.up()
        page.keyboard.up("Shift")

    _act(session, timeline, measure)
    page.mouse.move(1, 1)
    expected = (x1 - x0) * ns_per_px
    assert math.isclose(float(timeline.get_attribute("data-ruler-ns")), expected, rel_tol=1e-6)
    value, unit, begin, end = RULER_TEXT.fullmatch(timeline.query_selector(".gw-ruler").inner_text()).groups()
    assert math.isclose(float(value) * UNIT_NS[unit], expected, rel_tol=1e-3)
    assert abs(int(begin.replace(",", "")) - (window[0] + (x0 - box["x"] - GUTTER) * ns_per_px)) <= 0.5
    assert abs(int(end.replace(",", "")) - (window[0] + (x1 - box["x"] - GUTTER) * ns_per_px)) <= 0.5
    assert _window(timeline) == window  # measuring did not pan
    assert timeline.query_selector(".gw-selection").inner_text() == ""
    assert session.scan(timeline, [HIGHLIGHT])[0]["count"] > 0  # the band's edges and label

    _act(session, timeline, lambda: page.keyboard.press("Escape"))
    assert timeline.get_attribute("data-ruler-ns") is None and timeline.query_selector(".gw-ruler").inner_text() == ""
    assert session.scan(timeline, [HIGHLIGHT])[0]["count"] == 0

    # A click where the drag began, however soon after it, is a click: the drag's press
    # starts no double-click (a second press would be ignored and leave the ruler up).
    elsewhere = x0 + 50
    _act(session, timeline, lambda: measure(elsewhere))
    assert timeline.get_attribute("data-ruler-ns") is not None
    _act(session, timeline, lambda: page.mouse.click(elsewhere, y))
    assert timeline.get_attribute("data-ruler-ns") is None
    assert timeline.query_selector(".gw-selection").inner_text() == ""  # the click only cleared
    session.assert_clean()


def test_hiding_the_selected_scope_clears_the_selection(session, matmul, timeline):
    box = timeline.query_selector(".gw-search")
    _act(session, timeline, lambda: box.fill("dot"))
    _act(session, timeline, lambda: box.press("Enter"))
    assert timeline.query_selector(".gw-selection").inner_text().startswith("selected: dot · ")
    load = timeline.query_selector(".gw-legend-item:has-text('load')")
    _act(session, timeline, load.click)  # another scope hidden: the selection stays
    assert timeline.query_selector(".gw-selection").inner_text().startswith("selected: dot · ")
    dot = timeline.query_selector(".gw-legend-item:has-text('dot')")
    _act(session, timeline, dot.click)
    assert timeline.query_selector(".gw-selection").inner_text() == ""
    _act(session, timeline, dot.click)  # shown again, it is not selected again
    assert timeline.query_selector(".gw-selection").inner_text() == ""
    session.assert_clean()


# The widths of the search box's placeholder and of the room inside the box, in CSS px.
PLACEHOLDER_ROOM = """box => {
  const style = getComputedStyle(box);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return [ctx.measureText(box.placeholder).width, room];
}"""


def test_the_search_box_shows_its_whole_placeholder(session, timeline):
    text, room = session.page.evaluate(PLACEHOLDER_ROOM, timeline.query_selector(".gw-search"))
    assert text > 100 and text <= room, (text, room)
    session.assert_clean()


# Pixels of the axis band (above the tick marks) that are not the background, per column
# from `x0` to `x1` (CSS px, end excluded): what text or a label box put there.
AXIS_INK = """([canvas, x0, x1, top, bottom]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const ctx = canvas.getContext('2d');
  const back = ctx.getImageData(1, 1, 1, 1).data;
  const out = [];
  for (let x = x0; x < x1; x++) {
    const column = ctx.getImageData(Math.round(x * dpr), Math.round(top * dpr), 1, Math.round((bottom - top) * dpr)).data;
    let ink = 0;
    for (let i = 0; i < column.length; i += 4) {
      if (column[i] !== back[0] || column[i + 1] !== back[1] || column[i + 2] !== back[2]) ink++;
    }
    out.push(ink);
  }
  return out;
}"""
LABEL_TOP, LABEL_BOTTOM = 2, AXIS - 7  # painter.ts: tick labels and the ruler's label sit above the tick marks


def test_axis_labels_are_never_cut_at_the_right_edge(session, timeline):
    # Narrowing the timeline keeps its scale: its right edge sweeps across more than a
    # tick spacing, so some width puts a label where the edge would cut it.
    page = session.page
    mount = page.query_selector(".gw-timeline-mount")
    width = mount.bounding_box()["width"]
    canvas = timeline.query_selector("canvas")
    for step in range(1, 33):
        _act(session, timeline, lambda: mount.evaluate("(el, w) => { el.style.width = `${w}px`; }", width - 8 * step))
        right = page.evaluate("c => c.clientWidth", canvas)
        edge = page.evaluate(AXIS_INK, [canvas, right - 3, right, LABEL_TOP, LABEL_BOTTOM])
        assert edge == [0, 0, 0], (width - 8 * step, edge)
    session.assert_clean()


# The columns (CSS px) where one pixel row of the canvas has the ruler's colour.
HIGHLIGHT_COLUMNS = """([canvas, y]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const row = canvas.getContext('2d').getImageData(0, Math.round(y * dpr), canvas.width, 1).data;
  const out = [];
  for (let x = 0; x < canvas.width; x++) {
    const i = 4 * x;
    if (row[i] === 0xd6 && row[i + 1] === 0x33 && row[i + 2] === 0x6c && !out.includes(Math.floor(x / dpr))) out.push(Math.floor(x / dpr));
  }
  return out;
}"""


# How many pixels of the ruler's colour a band of columns and rows holds.
HIGHLIGHT_IN_ROWS = """([canvas, x0, x1, top, bottom]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const data = canvas.getContext('2d').getImageData(Math.round(x0 * dpr), Math.round(top * dpr),
                                                    Math.round((x1 - x0) * dpr), Math.round((bottom - top) * dpr)).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i] === 0xd6 && data[i + 1] === 0x33 && data[i + 2] === 0x6c) n++;
  return n;
}"""


def test_the_ruler_label_covers_no_tick_or_tick_label(session, timeline):
    page = session.page
    canvas = timeline.query_selector("canvas")
    box = canvas.bounding_box()
    y = box["y"] + AXIS + 40
    # A ruler 60 px wide, moved along the axis by steps smaller than a label: somewhere its
    # label lands on a tick and its label.
    for step in range(20):
        x0 = box["x"] + GUTTER + 150 + 12 * step

        def measure():
            page.mouse.move(x0, y)
            page.keyboard.down("Shift")
            page.mouse.down()
            page.mouse.move(x0 + 60, y, steps=3)
            page.mouse.up()
            page.keyboard.up("Shift")
        _act(session, timeline, measure)
        inside = page.evaluate(HIGHLIGHT_COLUMNS, [canvas, LABEL_TOP + 1])
        assert inside, "the ruler has a label in the axis"
        left, right = min(inside), max(inside)
        assert right - left == len(inside) - 1  # one box
        # The label is one run of colour, with no tick label sticking out beside it.
        around = page.evaluate(AXIS_INK, [canvas, left - 3, left, LABEL_TOP, LABEL_BOTTOM]) + \
            page.evaluate(AXIS_INK, [canvas, right + 1, right + 4, LABEL_TOP, LABEL_BOTTOM])
        assert around == [0] * 6, (step, around)
        # Below it the tick marks show: the label leaves the marks' rows alone.
        marks = page.evaluate(HIGHLIGHT_IN_ROWS, [canvas, left, right + 1, AXIS - 6, AXIS - 1])
        assert marks == 0, (step, marks)
    session.assert_clean()
