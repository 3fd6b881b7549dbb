"""The timeline widget in a real JupyterLab: the notebook's Python builds it from a real H200
trace, Chromium draws it, a click on a slice reaches Python as ``widget.selected``, and
Python clearing ``selected`` clears it on screen. Nothing is fetched from outside."""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("GWATCH_CHROMIUM", "/usr/bin/chromium")
if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need playwright (pip install playwright)")
pytest.importorskip("jupyterlab", reason="this test needs JupyterLab (pip install jupyterlab)")
pytest.importorskip("anywidget", reason="the widget needs anywidget (pip install anywidget)")
nbformat = pytest.importorskip("nbformat", reason="this test needs nbformat")

from conftest import FIXTURES, ROOT  # noqa: E402
from test_browser import COLOUR_SCAN, HIGHLIGHT, _rgb  # noqa: E402
from gwatch_nb.serializers import scope_colours  # noqa: E402

TOKEN = "gwatch-test"
CELLS = [
    f"import sys\nsys.path.insert(0, {ROOT!r})\nimport gwatch_nb\n"
    f"w = gwatch_nb.load({FIXTURES + '/attention_h200.json'!r}).widget()\nw",
    "r = w.selected_row\nprint('SELECTED', w.selected['scope'], r['scope'], "
    "f\"block ({r['block_x']}, {r['block_y']}, {r['block_z']}) warp {r['warp']} · SM {r['sm']}\")",
    "w.selected = {}",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(root / "timeline.ipynb"))
    # No "news?" prompt over the notebook.
    (root / ".config" / "labconfig").mkdir(parents=True)
    (root / ".config" / "labconfig" / "page_config.json").write_text(
        '{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}')
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / ".config"), "JUPYTER_RUNTIME_DIR": str(root / ".runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(root / ".workspaces")}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={root}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("JupyterLab did not start")
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def _run_cell(page, index: int) -> None:
    editor = page.locator(".jp-Notebook .jp-Cell .cm-content").nth(index)
    editor.click()
    page.keyboard.press("Shift+Enter")


def test_widget_in_jupyterlab_round_trips_the_selection(lab):
    blocked, errors = [], []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))

        def route(r):
            url = r.request.url
            if url.startswith(lab) or url.startswith(lab.replace("http", "ws")):
                r.continue_()
            else:
                blocked.append(url)
                r.abort()
        page.route("**/*", route)
        page.goto(f"{lab}/lab/tree/timeline.ipynb?token={TOKEN}")
        page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=60_000)
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)  # cells sent earlier are lost

        _run_cell(page, 0)
        page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1", timeout=60_000)
        timeline = page.query_selector(".gw-timeline")
        names = ["load_kv", "dot_qk", "softmax", "dot_pv"]
        canvas = timeline.query_selector("canvas")
        found = page.evaluate(COLOUR_SCAN, [canvas, [list(_rgb(c)) for c in scope_colours(len(names))]])
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
    assert blocked == [], f"requests outside the Jupyter server: {blocked}"
    assert errors == [], f"console errors: {errors}"
