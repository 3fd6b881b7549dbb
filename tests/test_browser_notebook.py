"""The demo notebook end to end in JupyterLab 4 and headless Chromium: Run All Cells on a
copy of notebooks/attention.ipynb, with a kernel that sees no GPU (the interpreter tier);
the %%gwatch cell's timeline draws the live trace in the scopes' colours, every cell
finishes without an error, and the page asks nothing of any server but this one."""
import re

import pytest

from support.browser import CHROMIUM, CHROMIUM_ARGS, COLOUR_SCAN, rgb
from support.jupyter_lab import LabPage, copy_demo, lab_server, require_lab_browser, without_gpu

pytestmark = pytest.mark.browser

sync_api, nbformat = require_lab_browser()

from gwatch_nb.palette import scope_colours  # noqa: E402

SCOPES = ["load_kv", "dot_qk", "softmax", "dot_pv"]
# Every code cell's prompt holds its execution count: none is waiting or running.
ALL_RAN = """n => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
  return prompts.length === n && prompts.every(p => /^\\[\\d+\\]:$/.test(p.textContent.trim()));
}"""
# Tracebacks (and anything on stderr) are drawn as outputs of this type.
STDERR = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """The demo after Run All Cells: its page, and the folder it ran in."""
    root = tmp_path_factory.mktemp("lab")
    path = copy_demo(root)
    code_cells = sum(c.cell_type == "code" for c in nbformat.read(path, as_version=4).cells)
    with lab_server(root, without_gpu()) as base, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lab = LabPage(browser, base)
        lab.open_notebook("notebooks/attention.ipynb")
        lab.page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        lab.page.get_by_text("Run All Cells", exact=True).click()
        # Run All stops at a cell that raises: then the traceback is what there is to see.
        lab.page.wait_for_function(f"n => ({ALL_RAN})(n) || document.querySelector({STDERR!r}) !== null",
                                   arg=code_cells, timeout=120_000)
        lab.page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=30_000)
        yield lab, path.parent, code_cells
        browser.close()


# The middle (CSS px) of the run of median length among the runs of one colour in a pixel row.
MEDIAN_RUN = """([canvas, colour, y]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const row = canvas.getContext('2d').getImageData(0, Math.round(y * dpr), canvas.width, 1).data;
  const runs = [];
  let start = -1;
  for (let x = 0; x <= canvas.width; x++) {
    const hit = x < canvas.width && row[4*x] === colour[0] && row[4*x+1] === colour[1] && row[4*x+2] === colour[2];
    if (hit && start < 0) start = x;
    if (!hit && start >= 0) { runs.push([x - start, (start + x) / 2]); start = -1; }
  }
  runs.sort((a, b) => a[0] - b[0]);
  return runs[Math.floor(runs.length / 2)][1] / dpr;
}"""


def wheel(page, timeline, delta):
    """One wheel step over the canvas, once the timeline has drawn it."""
    frames = int(timeline.get_attribute("data-frames"))
    page.mouse.wheel(0, delta)
    page.wait_for_function("([t, n]) => t.dataset.frames > n", arg=[timeline.element_handle(), frames])


def test_run_all_draws_the_live_trace_and_the_analysis(ran):
    lab, folder, code_cells = ran
    page = lab.page
    assert page.evaluate(ALL_RAN, code_cells), "not every code cell ran"
    cell = page.locator(".jp-Notebook .jp-CodeCell", has_text="%%gwatch")
    assert cell.count() == 1
    timeline = cell.locator(".jp-OutputArea .gw-timeline")
    timeline.scroll_into_view_if_needed()
    page.wait_for_function("t => t.dataset.frames >= 1", arg=timeline.element_handle(), timeout=30_000)
    assert "host time (interpreter), not GPU time" in timeline.inner_text()
    canvas = timeline.locator("canvas").element_handle()
    colours = [list(rgb(c)) for c in scope_colours(len(SCOPES))]
    # The whole launch: sixteen program instances one after another, each mostly load_kv and softmax.
    whole = page.evaluate(COLOUR_SCAN, [canvas, colours])
    assert all(whole[SCOPES.index(name)]["count"] > 100 for name in ("load_kv", "softmax")), whole
    # Zoomed in on one instance, its short dot_qk and dot_pv show too: a typical one (the
    # softmax of median length; host time stretches some instances on a busy machine).
    box, softmax = canvas.bounding_box(), whole[SCOPES.index("softmax")]
    middle = page.evaluate(MEDIAN_RUN, [canvas, colours[SCOPES.index("softmax")], softmax["y"]])
    page.mouse.move(box["x"] + middle, box["y"] + softmax["y"])
    for _ in range(3):
        wheel(page, timeline, -600)
    zoomed = page.evaluate(COLOUR_SCAN, [canvas, colours])
    counts = {name: entry["count"] for name, entry in zip(SCOPES, zoomed)}
    assert all(count > 0 for count in counts.values()), f"scope colours on the zoomed canvas: {counts}"
    # How wide a short scope is next to the softmax depends on the host's load: zoomed on
    # itself, each grows to a readable width, and zooming back out returns to this view.
    for name in ("dot_qk", "dot_pv"):
        found = page.evaluate(COLOUR_SCAN, [canvas, colours])[SCOPES.index(name)]
        page.mouse.move(box["x"] + found["x"], box["y"] + found["y"])
        steps = 0
        while found["count"] <= 20 and steps < 6:
            wheel(page, timeline, -600)
            steps += 1
            found = page.evaluate(COLOUR_SCAN, [canvas, colours])[SCOPES.index(name)]
        assert found["count"] > 20, f"{name} covers {found['count']} pixels after {steps} zoom steps on it"
        for _ in range(steps):
            wheel(page, timeline, 600)

    text = page.locator(".jp-Notebook").inner_text()
    assert "132 SMs ran warps. Busiest: SM 125, 596.7 us busy" in text  # the H200 fixture's analysis
    assert re.search(r"softmax\s+102\s+65536", text)
    assert (folder / "attention_trace.html").stat().st_size > 100_000


def test_no_cell_shows_an_error_and_nothing_leaves_the_server(ran):
    lab, _, _ = ran
    assert lab.blocked == [], f"requests outside the Jupyter server: {lab.blocked}"
    assert lab.page.locator(STDERR).all_inner_texts() == []
    outputs = lab.page.locator(".jp-Notebook .jp-OutputArea-output")
    shown = "\n".join(outputs.all_inner_texts())
    assert not re.search(r"Traceback|\w*Error\b", shown), re.findall(r".*(?:Traceback|Error\b).*", shown)
    assert lab.errors == [], f"console errors: {lab.errors}"
