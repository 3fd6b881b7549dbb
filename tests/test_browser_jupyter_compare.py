"""A comparison displayed in a real JupyterLab: the notebook shows its verdicts, both runs'
timelines (drawn by the compare widget from two real H200 traces) and its charts; the
wheel over one run zooms both. Nothing is fetched from outside the Jupyter server."""
import pytest

from support.browser import CHROMIUM, CHROMIUM_ARGS, COLOUR_SCAN, GUTTER, rgb as _rgb
from support.jupyter_lab import LabPage, lab_server, require_lab_browser

pytestmark = pytest.mark.browser

sync_api, nbformat = require_lab_browser()

from conftest import FIXTURES, ROOT  # noqa: E402
from gwatch_nb.palette import scope_colours  # noqa: E402

CELL = (f"import sys\nsys.path.insert(0, {ROOT!r})\nimport gwatch_nb\n"
        f"cmp = gwatch_nb.compare(gwatch_nb.load({FIXTURES + '/attention_h200.json'!r}), "
        f"gwatch_nb.load({FIXTURES + '/attention_4k_h200.json'!r}), labels=('N=1024', 'N=4096'))\ncmp")
BODIES = "[...document.querySelectorAll('.gw-compare .gw-body')]"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(root / "compare.ipynb"))
    with lab_server(root) as base:
        yield base


def test_comparison_shows_both_runs_in_step(lab):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lab_page = LabPage(browser, lab)
        page = lab_page.page
        lab_page.open_notebook("compare.ipynb")
        page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_function(f"{BODIES}.length === 2 && {BODIES}.every(b => Number(b.dataset.frames) >= 1)",
                               timeout=90_000)
        assert "softmax: " in page.inner_text(".gw-compare-verdicts")
        canvases = page.query_selector_all(".gw-compare canvas")
        colours = [list(_rgb(c)) for c in scope_colours(4)]
        for canvas in canvases:
            found = page.evaluate(COLOUR_SCAN, [canvas, colours])
            assert found[2]["count"] > 50, "softmax is not drawn"
        root = page.query_selector(".gw-compare")
        before = float(root.get_attribute("data-ns-per-px"))
        frames = page.evaluate(f"{BODIES}.map(b => b.dataset.frames)")
        canvases[0].scroll_into_view_if_needed()
        box = canvases[0].bounding_box()
        page.mouse.move(box["x"] + GUTTER + 100, box["y"] + 60)
        page.mouse.wheel(0, -800)
        page.wait_for_function(f"old => {BODIES}.every((b, i) => b.dataset.frames !== old[i])", arg=frames)
        assert float(root.get_attribute("data-ns-per-px")) < before / 2
        page.wait_for_function("document.querySelectorAll('.jp-OutputArea svg.marks').length >= 1", timeout=60_000)
        browser.close()
    assert lab_page.blocked == [], f"requests outside the Jupyter server: {lab_page.blocked}"
    assert lab_page.errors == [], f"console errors: {lab_page.errors}"
