"""The summary charts in Chromium: in a report of several launches they follow the
timeline's launch picker, and in a notebook they take JupyterLab's theme colours, dark
ones included, switching when the user switches theme."""
import json
import os

import pytest

from support.browser import Session, require_browser

pytestmark = pytest.mark.browser

require_browser()
pytest.importorskip("altair", reason="the charts need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.charts import dashboard  # noqa: E402
from gwatch_nb.trace import Trace  # noqa: E402

STATIC = os.path.join(os.path.dirname(gwatch_nb.__file__), "static")
ORIGIN = "http://gwatch.test"
# Colours of JupyterLab's own themes (@jupyterlab/theme-dark-extension, theme-light-extension).
DARK = {"--jp-layout-color0": "#111111", "--jp-ui-font-color1": "rgba(255, 255, 255, 0.87)",
        "--jp-ui-font-color2": "rgba(255, 255, 255, 0.54)", "--jp-border-color2": "#424242"}
LIGHT = {"--jp-layout-color0": "#ffffff", "--jp-ui-font-color1": "rgba(0, 0, 0, 0.87)",
         "--jp-ui-font-color2": "rgba(0, 0, 0, 0.54)", "--jp-border-color2": "#e0e0e0"}

VISIBLE_CHART_TEXT = """() => [...document.querySelectorAll('.gw-charts')]
  .filter(c => c.offsetParent !== null)
  .flatMap(c => [...c.querySelectorAll('svg text')].map(t => t.textContent))"""

# The chart's background (vega's SVG renderer paints it on the <svg>) and the fill of its
# axis labels, as drawn.
CHART_COLOURS = """() => {
  const svg = document.querySelector('.gw-charts svg');
  const label = svg.querySelector('.role-axis-label text');
  return { background: getComputedStyle(svg).backgroundColor, label: getComputedStyle(label).fill };
}"""


def _brightness(css: str) -> float:
    """0 (black) to 1 (white) of an rgb()/rgba() colour as getComputedStyle gives it, alpha over black."""
    inside = css[css.index("(") + 1:css.index(")")]
    parts = [float(p) for p in inside.replace("/", ",").replace(" ", ",").split(",") if p]
    alpha = parts[3] if len(parts) > 3 else 1.0
    return sum(parts[:3]) / (3 * 255) * alpha


def test_report_charts_follow_the_launch_picker(browser, tmp_path):
    matmul = gwatch_nb.load(f"{FIXTURES}/matmul_h200.json")
    attention = gwatch_nb.load(f"{FIXTURES}/attention_h200.json")
    # Launch 0 runs scopes 100-102, launch 1 also 103 ("dot_pv"): their charts differ.
    two = Trace(matmul.records + attention.records, attention.scope_names)
    path = tmp_path / "two.html"
    two.to_html(path)
    session = Session(browser)
    timeline = session.open(path)
    page = session.page
    page.wait_for_function("document.querySelectorAll('.gw-charts svg').length === 4")
    first = page.evaluate(VISIBLE_CHART_TEXT)
    assert "softmax" in first and "dot_pv" not in first
    timeline.query_selector("select").select_option("1")
    page.wait_for_function("document.querySelectorAll('.gw-charts:not([hidden]) svg').length === 4")
    second = page.evaluate(VISIBLE_CHART_TEXT)
    assert "dot_pv" in second
    timeline.query_selector("select").select_option("0")
    page.wait_for_function("document.querySelectorAll('.gw-charts:not([hidden]) svg').length === 4")
    assert page.evaluate(VISIBLE_CHART_TEXT) == first
    session.assert_clean()
    session.context.close()


def test_notebook_charts_take_the_jupyterlab_theme(browser):
    spec = dashboard(gwatch_nb.load(f"{FIXTURES}/matmul_h200.json")).to_dict()
    # The page imports the module itself; the test waits for it rather than awaiting an
    # import inside evaluate (a promise Chromium may collect while a busy machine parses 900 KB).
    files = {"/index.html": ("text/html", "<!doctype html><html><body data-jp-theme-light='false'>"
                             "<script type='module'>import w from '/runtime.js'; window.chartsWidget = w;</script>"
                             "</body></html>"),
             "/runtime.js": ("text/javascript", open(f"{STATIC}/runtime.js", encoding="utf-8").read())}
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    blocked, errors = [], []

    def serve(route):  # the test's own origin, answered here: nothing leaves the machine
        path = route.request.url.removeprefix(ORIGIN)
        if path in files:
            route.fulfill(content_type=files[path][0], body=files[path][1])
        else:
            blocked.append(route.request.url)
            route.abort()
    context.route("**/*", serve)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{ORIGIN}/index.html")
    set_theme = """([vars, light]) => {
      for (const [k, v] of Object.entries(vars)) document.body.style.setProperty(k, v);
      document.body.dataset.jpThemeLight = light;
    }"""
    page.evaluate(set_theme, [DARK, "false"])
    page.wait_for_function("window.chartsWidget !== undefined")
    page.evaluate("""(spec) => {
      const el = document.createElement('div');
      document.body.appendChild(el);
      window.chartsWidget.render({ model: { get: () => spec, on() {}, off() {} }, el });
    }""", json.loads(json.dumps(spec)))
    page.wait_for_function("document.querySelector('.gw-charts svg .role-axis-label text') !== null")
    dark = page.evaluate(CHART_COLOURS)
    assert _brightness(dark["background"]) < 0.2 and _brightness(dark["label"]) > 0.3, dark
    page.evaluate(set_theme, [LIGHT, "true"])  # the user switches to the light theme
    page.wait_for_function(f"({CHART_COLOURS})().background !== {json.dumps(dark['background'])}")
    light = page.evaluate(CHART_COLOURS)
    assert _brightness(light["background"]) > 0.9 and _brightness(light["label"]) < 0.3, light
    assert blocked == [] and errors == []
    context.close()
