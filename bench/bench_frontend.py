"""Front-end timings at two million scope instances (docs/PERFORMANCE.md, "Front end").

attention_4k_h200.json tiled 8× (bench/tiled_trace.py) = 2,097,152 instances, 8,192 warps
on 132 SMs. Measures, on this machine:
  * Python: timeline payload build, widget state bytes, HTML export time and size;
  * Chromium (headless, software rendering) on the exported HTML with the network cut:
    first paint (navigation start → first frame drawn: parse, inflate, lanes, draw),
    and per wheel-zoom step and drag-pan step the draw cost and the event → frame latency;
  * the widget in a real JupyterLab: Shift+Enter on `big.widget()` → first frame, and zoom.

    python bench/bench_frontend.py [--copies 8] [--chromium /usr/bin/chromium]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gwatch_nb  # noqa: E402
from gwatch_nb.serializers import payload_nbytes, timeline_payload  # noqa: E402
from tiled_trace import tile  # noqa: E402

FIXTURE = HERE.parent / "tests" / "fixtures" / "attention_4k_h200.json"
STEPS = 24

# One interaction step in the page: dispatch the event, wait for the frame that draws it.
STEP_JS = """async ([kind, dx, dy]) => {
  const canvas = document.querySelector('.gw-canvas');
  const root = document.querySelector('.gw-timeline');
  const box = canvas.getBoundingClientRect();
  const x = box.left + 180 + (box.width - 180) / 2, y = box.top + 120;
  const frames = Number(root.dataset.frames);
  const began = performance.now();
  if (kind === 'wheel') {
    canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: dy, clientX: x, clientY: y, bubbles: true, cancelable: true }));
  } else {
    const init = { clientX: x, clientY: y, button: 0, buttons: 1, pointerId: 1, bubbles: true };
    canvas.dispatchEvent(new PointerEvent('pointerdown', init));
    canvas.dispatchEvent(new PointerEvent('pointermove', { ...init, clientX: x + dx }));
    canvas.dispatchEvent(new PointerEvent('pointerup', { ...init, clientX: x + dx, buttons: 0 }));
  }
  while (Number(root.dataset.frames) === frames) await new Promise(r => requestAnimationFrame(r));
  return { latency: performance.now() - began, draw: Number(root.dataset.drawMs) };
}"""


def _summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms, max {ordered[-1]:.1f} ms"


def measure_python(trace) -> tuple[dict, Path]:
    out = {}
    began = time.perf_counter()
    payload = timeline_payload(trace)
    out["payload build"] = f"{time.perf_counter() - began:.2f} s"
    out["widget binary state"] = f"{payload_nbytes(payload) / len(trace.df):.2f} bytes per instance"
    path = Path(tempfile.mkdtemp()) / "two_million.html"
    began = time.perf_counter()
    trace.to_html(path)
    out["HTML export"] = f"{time.perf_counter() - began:.2f} s"
    out["HTML size"] = f"{path.stat().st_size / 1e6:.1f} MB ({path.stat().st_size / len(trace.df):.2f} bytes per instance)"
    return out, path


def measure_browser(path: Path, chromium: str) -> dict:
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        blocked = []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                   else (blocked.append(route.request.url), route.abort()))
        page.goto(path.as_uri())
        page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1", timeout=60_000)
        parsed = page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
        painted = float(page.get_attribute(".gw-timeline", "data-first-paint-ms"))
        out["first paint"] = (f"{painted:.0f} ms after navigation start "
                              f"({parsed:.0f} ms of it reading the 11 MB page)")
        page.wait_for_timeout(500)

        for label, setup in (("SMs collapsed (64 warps merged per row)", None),
                             ("first SM expanded (warp rows)", "expand")):
            if setup == "expand":
                box = page.query_selector(".gw-canvas").bounding_box()
                page.mouse.click(box["x"] + 30, box["y"] + 24 + 8)
                page.mouse.dblclick(box["x"] + 400, box["y"] + 10)
                page.wait_for_timeout(300)
            zoom = [page.evaluate(STEP_JS, ["wheel", 0, -120]) for _ in range(STEPS)]
            zoom += [page.evaluate(STEP_JS, ["wheel", 0, 120]) for _ in range(STEPS)]
            pan = [page.evaluate(STEP_JS, ["drag", 40, 0]) for _ in range(STEPS)]
            out[f"zoom, {label}: draw"] = _summary([s["draw"] for s in zoom])
            out[f"zoom, {label}: event → frame"] = _summary([s["latency"] for s in zoom])
            out[f"pan, {label}: draw"] = _summary([s["draw"] for s in pan])
        browser.close()
    if blocked:
        raise RuntimeError(f"the page requested the network: {blocked}")
    return out


def measure_jupyterlab(copies: int, chromium: str) -> dict:
    """Shift+Enter on `w = big.widget(); w` → the widget's first frame, in a real JupyterLab."""
    import os
    import socket
    import subprocess
    import urllib.request

    import nbformat
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp())
    cells = [f"import sys\nsys.path.insert(0, {str(HERE)!r})\nimport gwatch_nb\nfrom tiled_trace import tile\n"
             f"big = tile(gwatch_nb.load({str(FIXTURE)!r}), {copies})\nbig.df.shape",
             "w = big.widget()\nw"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(root / "bench.ipynb"))
    (root / "config" / "labconfig").mkdir(parents=True)
    (root / "config" / "labconfig" / "page_config.json").write_text(
        '{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--ServerApp.token=bench", f"--ServerApp.root_dir={root}"],
        env={**os.environ, "JUPYTER_CONFIG_DIR": str(root / "config")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    out = {}
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token=bench", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/bench.ipynb?token=bench")
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
            editors = page.locator(".jp-Notebook .jp-Cell .cm-content")
            editors.nth(0).click()
            page.keyboard.press("Shift+Enter")
            page.locator(".jp-OutputArea-output", has_text="(2097152, 16)").first.wait_for(timeout=120_000)
            editors.nth(1).click()
            began = page.evaluate("performance.now()")
            page.keyboard.press("Shift+Enter")
            page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1", timeout=120_000)
            painted = float(page.get_attribute(".gw-timeline", "data-first-paint-ms"))
            out["JupyterLab: Shift+Enter → first frame"] = (
                f"{painted - began:.0f} ms (payload build, comm buffers, lanes, first draw)")
            page.wait_for_timeout(500)
            zoom = [page.evaluate(STEP_JS, ["wheel", 0, -120]) for _ in range(STEPS)]
            out["JupyterLab: zoom, SMs collapsed: draw"] = _summary([s["draw"] for s in zoom])
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    trace = tile(gwatch_nb.load(FIXTURE), args.copies)
    print(f"{len(trace.df):,} scope instances, {len(trace.warps):,} warps, "
          f"{trace.df['sm'].nunique()} SMs, {trace.launches['duration_ns'][0] / 1e3:.0f} µs")
    python, path = measure_python(trace)
    results = {**python, **measure_browser(path, args.chromium), **measure_jupyterlab(args.copies, args.chromium)}
    for key, value in results.items():
        print(f"| {key} | {value} |")


if __name__ == "__main__":
    main()
