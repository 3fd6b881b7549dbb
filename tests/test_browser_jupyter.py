"""The timeline widget in a real JupyterLab: the notebook's Python builds it from a real H200
trace, Chromium draws it, a click on a slice reaches Python as ``widget.selected``, and
Python clearing ``selected`` clears it on screen. Nothing is fetched from outside."""
import pytest

from support.browser import CHROMIUM, CHROMIUM_ARGS, COLOUR_SCAN, HIGHLIGHT, rgb
from support.jupyter_lab import LabPage, lab_server, require_lab_browser

pytestmark = pytest.mark.browser

sync_api, nbformat = require_lab_browser()

from conftest import FIXTURES, ROOT  # noqa: E402
import gwatch_nb  # noqa: E402
from gwatch_nb.palette import scope_colours  # noqa: E402

CELLS = [
    f"import sys\nsys.path.insert(0, {ROOT!r})\nimport gwatch_nb\n"
    f"w = gwatch_nb.load({FIXTURES + '/attention_h200.json'!r}).widget()\nw",
    "r = w.selected_row\nprint('SELECTED', w.selected['scope'], r['scope'], "
    "f\"block ({r['block_x']}, {r['block_y']}, {r['block_z']}) warp {r['warp']} · SM {r['sm']}\")",
    "w.selected = {}",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(root / "timeline.ipynb"))
    with lab_server(root) as base:
        yield base


def _run_cell(page, index: int) -> None:
    editor = page.locator(".jp-Notebook .jp-Cell .cm-content").nth(index)
    editor.click()
    page.keyboard.press("Shift+Enter")


def test_widget_in_jupyterlab_round_trips_the_selection(lab):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lab_page = LabPage(browser, lab)
        page = lab_page.page
        lab_page.open_notebook("timeline.ipynb")

        _run_cell(page, 0)
        page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1", timeout=60_000)
        timeline = page.query_selector(".gw-timeline")
        names = ["load_kv", "dot_qk", "softmax", "dot_pv"]
        canvas = timeline.query_selector("canvas")
        found = page.evaluate(COLOUR_SCAN, [canvas, [list(rgb(c)) for c in scope_colours(len(names))]])
        assert all(entry["count"] > 50 for entry in found), "not every scope's colour is on the canvas"
        box = canvas.bounding_box()
        softmax = found[names.index("softmax")]
        page.mouse.click(box["x"] + softmax["x"], box["y"] + softmax["y"])
        page.wait_for_function("s => s.textContent.startsWith('selected: softmax')",
                               arg=timeline.query_selector(".gw-selection"))
        shown = timeline.query_selector(".gw-selection").inner_text()

        _run_cell(page, 1)
        output = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']").first
        output.wait_for(timeout=30_000)
        printed = output.inner_text().strip()
        assert printed.startswith("SELECTED softmax softmax block (")
        assert printed.removeprefix("SELECTED softmax softmax ") in shown  # Python's row is the clicked slice

        _run_cell(page, 2)
        page.wait_for_function("s => s.textContent === ''", arg=timeline.query_selector(".gw-selection"))
        page.wait_for_function(
            "([canvas, scan, colour]) => eval(scan)([canvas, [colour]])[0].count === 0",
            arg=[canvas, COLOUR_SCAN, list(HIGHLIGHT)])
        browser.close()
    assert lab_page.blocked == [], f"requests outside the Jupyter server: {lab_page.blocked}"
    assert lab_page.errors == [], f"console errors: {lab_page.errors}"


def test_timeline_keys_and_search_in_jupyterlab_leave_the_notebook_alone(lab):
    # In command mode JupyterLab binds A, D D, S and more to notebook commands: keys meant for
    # the timeline must stay with it, and typing in its search box must not edit a cell.
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lab_page = LabPage(browser, lab)
        page = lab_page.page
        lab_page.open_notebook("timeline.ipynb")
        _run_cell(page, 0)
        page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1", timeout=60_000)
        timeline = page.query_selector(".gw-timeline")
        cells = page.locator(".jp-Notebook .jp-Cell")
        assert cells.count() == len(CELLS)
        window = lambda: [timeline.get_attribute(a) for a in ("data-view-start-ns", "data-view-end-ns")]  # noqa: E731
        box = timeline.query_selector("canvas").bounding_box()
        page.mouse.click(box["x"] + 300, box["y"] + 10)  # the time axis: focuses the timeline
        whole = window()
        page.keyboard.press("w")
        page.wait_for_function("([el, w]) => el.dataset.viewEndNs !== w", arg=[timeline, whole[1]])
        for key in ("a", "a", "d", "s", "s", "d"):
            page.keyboard.press(key)
        page.wait_for_timeout(300)
        assert cells.count() == len(CELLS), "a key for the timeline reached the notebook"

        search = timeline.query_selector(".gw-search")
        search.click()
        page.keyboard.type("softmax sm 4")
        page.wait_for_function("el => el.dataset.matches !== undefined", arg=timeline)
        df = gwatch_nb.load(FIXTURES + "/attention_h200.json").df
        expected = int(((df.scope == "softmax") & (df.sm == 4)).sum())
        assert expected > 0
        assert timeline.get_attribute("data-matches") == str(expected)
        assert cells.count() == len(CELLS)
        assert page.locator(".jp-Notebook .jp-Cell .cm-content").nth(0).inner_text().startswith("import sys")
        browser.close()
    assert lab_page.errors == [], f"console errors: {lab_page.errors}"

