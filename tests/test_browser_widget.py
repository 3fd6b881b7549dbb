"""The anywidget module itself (static/widget.js) in Chromium, driven the way a widget host
drives it: ``render({model, el, signal})`` with the payload's columns as DataViews. The
bytes sit at offsets inside larger buffers, as comm buffers may; aligned or not, the
drawing must be the same. Aborting the signal removes the widget."""
import base64
import os

import pytest

from support.browser import CHROMIUM, CHROMIUM_ARGS, COLOUR_SCAN, require_browser, rgb

pytestmark = pytest.mark.browser

sync_api = require_browser()

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb.serializers import timeline_payload  # noqa: E402

ORIGIN = "http://gwatch.test"
STATIC = os.path.join(os.path.dirname(gwatch_nb.__file__), "static")

# Mount the widget (imported by the page) into a fresh element with every column copied to
# `offset` bytes into its own buffer. The test then waits for the first frame: no promise
# is left pending inside evaluate, which Chromium may collect on a busy machine.
MOUNT_JS = """([state, offset]) => {
  const widget = window.timelineWidget;
  const payload = JSON.parse(JSON.stringify(state));
  for (const table of ['warps', 'instances']) {
    for (const column of Object.values(payload[table])) {
      const text = atob(column.view);
      const buffer = new ArrayBuffer(text.length + offset + 8);
      const bytes = new Uint8Array(buffer, offset, text.length);
      for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      column.view = new DataView(buffer, offset, text.length);
    }
  }
  const traits = { payload, launch: 0, height: 400, selected: {} };
  const model = { get: (k) => traits[k], set() {}, save_changes() {}, on() {}, off() {} };
  const el = document.createElement('div');
  document.body.appendChild(el);
  const controller = new AbortController();
  const cleanup = widget.render({ model, el, signal: controller.signal });
  window.mounted = { el, controller, cleanup };
}"""


@pytest.fixture(scope="module")
def state():
    payload = timeline_payload(gwatch_nb.load(f"{FIXTURES}/matmul_h200.json"))
    for table in ("warps", "instances"):
        for column in payload[table].values():
            column["view"] = base64.b64encode(column["view"].tobytes()).decode("ascii")
    return payload


def test_columns_at_any_byte_offset_draw_the_same(state):
    files = {"/index.html": ("text/html", "<!doctype html><html><body><script type='module'>"
                             "import w from '/widget.js'; window.timelineWidget = w;</script></body></html>"),
             "/widget.js": ("text/javascript", open(f"{STATIC}/widget.js", encoding="utf-8").read())}
    blocked, errors = [], []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))

        def serve(route):  # the test's own origin, answered here: nothing leaves the machine
            path = route.request.url.removeprefix(ORIGIN)
            if path in files:
                route.fulfill(content_type=files[path][0], body=files[path][1])
            else:
                blocked.append(route.request.url)
                route.abort()
        page.route("**/*", serve)
        page.goto(f"{ORIGIN}/index.html")
        page.add_style_tag(content=open(f"{STATIC}/widget.css", encoding="utf-8").read())

        page.wait_for_function("window.timelineWidget !== undefined")
        drawn = {}
        for offset in (0, 8, 3):  # no offset, an aligned one, one no 2-, 4- or 8-byte type allows
            page.evaluate(MOUNT_JS, [state, offset])
            page.wait_for_function("Number(window.mounted.el.querySelector('.gw-timeline').dataset.frames) >= 1")
            drawn[offset] = page.evaluate("() => window.mounted.el.querySelector('canvas').toDataURL()")
            canvas = page.query_selector_all("canvas")[-1]
            colours = [list(rgb(c)) for c in state["scopes"]["colors"]]
            assert all(e["count"] > 50 for e in page.evaluate(COLOUR_SCAN, [canvas, colours])), offset
            page.evaluate("() => window.mounted.controller.abort()")
            assert page.evaluate("() => window.mounted.el.children.length") == 0
        assert drawn[8] == drawn[0] and drawn[3] == drawn[0]
        assert page.evaluate("() => typeof window.mounted.cleanup") == "function"
        browser.close()
    assert blocked == [] and errors == []
