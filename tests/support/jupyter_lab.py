"""A real JupyterLab server on localhost, a Chromium page that can reach nothing else, and
a copy of the demo notebook to run: shared by the notebook and JupyterLab tests."""
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .browser import require_browser

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "gwatch-test"


def require_lab_browser():
    """Skip the calling test module, with the reason, unless Chromium, playwright, JupyterLab,
    anywidget and nbformat are all here; returns (playwright.sync_api, nbformat)."""
    import pytest
    sync_api = require_browser()
    pytest.importorskip("jupyterlab", reason="this test needs JupyterLab (pip install jupyterlab)")
    pytest.importorskip("anywidget", reason="the widget needs anywidget (pip install anywidget)")
    return sync_api, pytest.importorskip("nbformat", reason="this test needs nbformat")


def without_gpu() -> dict:
    """This process's environment with every GPU hidden: a kernel started with it runs the
    demo as on a machine without one (the interpreter tier), wherever the tests run."""
    return {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


def copy_demo(root: Path) -> Path:
    """notebooks/attention.ipynb copied under ``root``, with the repository's examples/ and
    tests/fixtures/ where the notebook looks for them; its outputs then stay out of the repository."""
    (root / "notebooks").mkdir()
    (root / "tests").mkdir()
    (root / "examples").symlink_to(ROOT / "examples")
    (root / "tests" / "fixtures").symlink_to(ROOT / "tests" / "fixtures")
    return Path(shutil.copy(ROOT / "notebooks" / "attention.ipynb", root / "notebooks"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(root: Path, env: dict | None = None, theme: str | None = None, grace_s: float = 30):
    """JupyterLab serving ``root`` on a free localhost port, in ``theme`` (e.g. "JupyterLab
    Dark"; default its own); yields its base URL. At the end it has ``grace_s`` to stop
    before it is killed."""
    # No "news?" prompt over the notebook.
    (root / ".config" / "labconfig").mkdir(parents=True)
    (root / ".config" / "labconfig" / "page_config.json").write_text(
        '{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}')
    # Render every cell, not only those in view, so the page's text holds all outputs.
    tracker = root / ".config" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    if theme:
        themes = root / ".config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        themes.mkdir(parents=True)
        (themes / "themes.jupyterlab-settings").write_text(json.dumps({"theme": theme}))
    port = _free_port()
    env = {**(env or os.environ), "JUPYTER_CONFIG_DIR": str(root / ".config"),
           "JUPYTERLAB_SETTINGS_DIR": str(root / ".config" / "lab" / "user-settings"),
           "JUPYTER_RUNTIME_DIR": str(root / ".runtime"), "JUPYTERLAB_WORKSPACES_DIR": str(root / ".workspaces")}
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
                    raise RuntimeError("JupyterLab did not start")
                time.sleep(0.5)
        yield base
    finally:
        _stop(server, grace_s)


def _stop(server: subprocess.Popen, grace_s: float) -> None:
    """End the server and every process under it (its kernels): asked first, killed if
    still there after ``grace_s``, so no test leaves a process behind."""
    import psutil  # JupyterLab's kernel (ipykernel) depends on it
    try:
        family = psutil.Process(server.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    server.terminate()
    try:
        server.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    _, alive = psutil.wait_procs(family, timeout=grace_s)
    for process in alive:
        process.kill()
    psutil.wait_procs(alive, timeout=10)


class LabPage:
    """A page of the server at ``base``: every request elsewhere is aborted and recorded in
    ``blocked``, console and page errors in ``errors``."""

    def __init__(self, browser, base: str):
        self.base = base
        self.blocked, self.errors = [], []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.base) or url.startswith(self.base.replace("http", "ws")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def open_notebook(self, path: str) -> None:
        """Open ``path`` (relative to the server's root) and wait for its kernel."""
        self.page.goto(f"{self.base}/lab/tree/{path}?token={TOKEN}")
        self.page.wait_for_selector(".jp-Notebook .jp-CodeCell .cm-content", timeout=60_000)
        self.page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)  # cells sent earlier are lost
