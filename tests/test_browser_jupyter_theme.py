"""In JupyterLab's dark theme the timeline and the summary charts are dark too: their
backgrounds come from the theme, not a white of their own."""
import pytest

from support.browser import CHROMIUM, CHROMIUM_ARGS
from support.jupyter_lab import LabPage, lab_server, require_lab_browser

pytestmark = pytest.mark.browser

sync_api, nbformat = require_lab_browser()
pytest.importorskip("altair", reason="the charts need altair (pip install altair)")

from conftest import FIXTURES, ROOT  # noqa: E402

CELLS = [f"import sys\nsys.path.insert(0, {ROOT!r})\nimport gwatch_nb\n"
         f"tr = gwatch_nb.load({FIXTURES + '/matmul_h200.json'!r})\ntr.widget()",
         "tr.charts()"]

# Brightness (0-1) of the timeline canvas's top-left pixel (its axis background) and of
# the chart's background as vega paints it on the <svg>.
BACKGROUNDS = """() => {
  const canvas = document.querySelector('.gw-timeline canvas');
  const [r, g, b] = canvas.getContext('2d').getImageData(2, 2, 1, 1).data;
  const chart = getComputedStyle(document.querySelector('.gw-charts svg')).backgroundColor;
  const [cr, cg, cb] = chart.match(/\\d+(\\.\\d+)?/g).map(Number);
  return { timeline: (r + g + b) / 765, chart: (cr + cg + cb) / 765, theme: document.body.dataset.jpThemeName };
}"""


def test_timeline_and_charts_are_dark_in_the_dark_theme(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(tmp_path / "dark.ipynb"))
    with lab_server(tmp_path, theme="JupyterLab Dark") as base, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lab = LabPage(browser, base)
        page = lab.page
        lab.open_notebook("dark.ipynb")
        for index in range(len(CELLS)):
            page.locator(".jp-Notebook .jp-Cell .cm-content").nth(index).click()
            page.keyboard.press("Shift+Enter")
        page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1", timeout=60_000)
        page.wait_for_function("document.querySelector('.gw-charts svg .role-axis-label') !== null", timeout=60_000)
        seen = page.evaluate(BACKGROUNDS)
        browser.close()
    assert seen["theme"] == "JupyterLab Dark"
    assert seen["timeline"] < 0.25 and seen["chart"] < 0.25, seen
    assert lab.blocked == [], f"requests outside the Jupyter server: {lab.blocked}"
