"""The browser harness of the front-end tests: Debian's Chromium driven by playwright, a
page that can reach nothing outside, and pixel scans of the timeline's canvas."""
import os
import shutil

CHROMIUM = os.environ.get("GWATCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
GUTTER, AXIS, HIGHLIGHT = 180, 24, (0xd6, 0x33, 0x6c)


def require_browser():
    """Skip the calling test module, with the reason, unless Chromium and playwright are
    here; returns playwright.sync_api."""
    import pytest
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
    return pytest.importorskip("playwright.sync_api", reason="browser tests need playwright (pip install playwright)")


# Per colour (r, g, b): how many canvas pixels have it, and the centre of its widest run.
COLOUR_SCAN = """([canvas, colours]) => {
  const ctx = canvas.getContext('2d');
  const { width, height, data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
  const dpr = canvas.width / canvas.clientWidth;
  const out = colours.map(() => ({ count: 0, best: 0, x: -1, y: -1, ys: [] }));
  for (let y = 0; y < height; y++) {
    let run = -1, runStart = 0;
    for (let x = 0; x <= width; x++) {
      const i = (y * width + x) * 4;
      const k = x < width ? colours.findIndex(c => c[0] === data[i] && c[1] === data[i+1] && c[2] === data[i+2]) : -1;
      if (k >= 0) { out[k].count++; if (!out[k].ys.includes(Math.floor(y / dpr))) out[k].ys.push(Math.floor(y / dpr)); }
      if (k !== run) {
        if (run >= 0 && x - runStart > out[run].best) {
          out[run].best = x - runStart; out[run].x = (runStart + x) / 2 / dpr; out[run].y = y / dpr;
        }
        run = k; runStart = x;
      }
    }
  }
  return out;
}"""


# How many separate runs of one colour a pixel row of the canvas holds.
COLOUR_RUNS = """([canvas, colour, y]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const row = canvas.getContext('2d').getImageData(0, Math.round(y * dpr), canvas.width, 1).data;
  let runs = 0, inside = false;
  for (let x = 0; x < canvas.width; x++) {
    const hit = row[4*x] === colour[0] && row[4*x+1] === colour[1] && row[4*x+2] === colour[2];
    if (hit && !inside) runs++;
    inside = hit;
  }
  return runs;
}"""


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


class Session:
    """One page with every non-file request aborted and recorded, and console errors,
    page errors and dialogs (alert!) recorded."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.blocked, self.errors, self.dialogs = [], [], []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _route(self, route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path):
        self.page.goto(path.as_uri())
        self.page.wait_for_function("document.querySelector('.gw-timeline')?.dataset.frames >= 1")
        return self.page.query_selector(".gw-timeline")

    def frames(self, timeline) -> int:
        return int(timeline.get_attribute("data-frames"))

    def wait_for_frame(self, timeline, after: int) -> None:
        self.page.wait_for_function("([el, n]) => Number(el.dataset.frames) > n", arg=[timeline, after])

    def scan(self, timeline, colours):
        canvas = timeline.query_selector("canvas")
        found = self.page.evaluate(COLOUR_SCAN, [canvas, [list(c) for c in colours]])
        box = canvas.bounding_box()
        for entry in found:
            entry["page_x"], entry["page_y"] = box["x"] + entry["x"], box["y"] + entry["y"]
        return found

    def pixels(self, timeline) -> str:
        return self.page.evaluate("c => c.toDataURL()", timeline.query_selector("canvas"))

    def assert_clean(self):
        assert self.blocked == [], f"the page tried the network: {self.blocked}"
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"
        assert self.errors == [], f"console errors: {self.errors}"
