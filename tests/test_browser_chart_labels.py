"""The summary charts as Chromium draws them in an HTML report: tick labels never overlap
and never stick out of their chart, durations come in a unit that suits them (not
100,000,000 ns of interpreter time), and iteration axes tick on whole iterations."""
import pytest

from support.browser import CHROMIUM, require_browser

pytestmark = pytest.mark.browser

sync_api = require_browser()
pytest.importorskip("altair", reason="HTML reports need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.charts import INTERPRETER_CANNOT_SHOW  # noqa: E402
from support.traces import slow_interpreter_trace  # noqa: E402

# Per chart, per axis: the tick labels drawn (opacity not 0), their boxes, and the chart's box.
AXIS_LABELS = """() => [...document.querySelectorAll('[data-gw-chart] svg')].map(svg => {
  const box = svg.getBoundingClientRect();
  const axes = [...svg.querySelectorAll('g.role-axis')].map(axis => {
    const title = axis.querySelector('g.role-axis-title text')?.textContent ?? '';
    const labels = [...axis.querySelectorAll('g.role-axis-label text')]
      .filter(t => t.getAttribute('opacity') !== '0' && getComputedStyle(t).opacity !== '0' && t.textContent)
      .map(t => { const r = t.getBoundingClientRect();
                  return { text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom }; });
    return { title, labels };
  });
  return { left: box.left, right: box.right, top: box.top, bottom: box.bottom, axes };
})"""


@pytest.fixture(scope="module")
def page():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 1300, "height": 900})
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                      else route.abort())
        yield context.new_page()
        browser.close()


def _drawn(page, path) -> list[dict]:
    page.goto(path.as_uri())
    for mount in page.query_selector_all("[data-gw-chart]"):
        mount.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelectorAll('[data-gw-chart] svg').length === 4")
    return page.evaluate(AXIS_LABELS)


def _overlap(a, b) -> bool:
    """Side by side closer than 2 px (labels that touch read as one number), and one above
    the other by more than the 2 px a text box's line height adds."""
    return a["left"] < b["right"] + 2 and b["left"] < a["right"] + 2 and \
        a["top"] < b["bottom"] - 2 and b["top"] < a["bottom"] - 2


@pytest.mark.parametrize("name", ["matmul_h200", "matmul_cold_h200", "attention_4k_h200", "attention_causal_h200",
                                  "slow_interpreter"])
def test_tick_labels_stay_apart_and_inside(page, tmp_path, name):
    trace = slow_interpreter_trace() if name == "slow_interpreter" else gwatch_nb.load(f"{FIXTURES}/{name}.json")
    path = tmp_path / f"{name}.html"
    trace.to_html(path)
    for chart in _drawn(page, path):
        for axis in chart["axes"]:
            labels = axis["labels"]
            for i, a in enumerate(labels):
                assert chart["left"] - 0.5 <= a["left"] and a["right"] <= chart["right"] + 0.5, (axis["title"], a)
                for b in labels[i + 1:]:
                    assert not _overlap(a, b), (axis["title"], a["text"], b["text"])


def test_units_suit_the_durations_and_iterations_are_whole(page, tmp_path):
    path = tmp_path / "slow.html"
    slow_interpreter_trace().to_html(path)
    charts = _drawn(page, path)
    titles = [axis["title"] for chart in charts for axis in chart["axes"]]
    assert "duration (ms)" in titles and not any("(ns" in t for t in titles)
    ticks = [label["text"] for chart in charts for axis in chart["axes"] if axis["title"] == "iteration (seq)"
             for label in axis["labels"]]
    assert ticks and all(t.replace(",", "").isdigit() for t in ticks)
    page_text = page.inner_text("body")
    assert "Scope statistics (durations in ms)" in page_text
    # Host times have no per-SM occupancy or idle time: the page says so instead of charting blocks.
    assert all(" ".join(why.split()) in " ".join(page_text.split()) for why in INTERPRETER_CANNOT_SHOW.values())
    every_label = [label["text"] for chart in charts for axis in chart["axes"] for label in axis["labels"]]
    assert not any(len(t.replace(",", "")) > 7 for t in every_label)  # no 100,000,000-style labels
