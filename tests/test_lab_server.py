"""The JupyterLab server the browser tests start leaves nothing running when it ends: not
itself and not the kernels it started, even when none of them answers the request to stop
(a machine too busy to shut down in time)."""
import json
import urllib.request

import pytest

pytest.importorskip("jupyterlab", reason="this test needs JupyterLab (pip install jupyterlab)")
psutil = pytest.importorskip("psutil", reason="this test needs psutil (JupyterLab's kernel brings it)")

from support.jupyter_lab import TOKEN, lab_server  # noqa: E402


def test_the_server_and_its_kernels_are_gone_when_it_ends(tmp_path):
    with lab_server(tmp_path, grace_s=2) as base:
        request = urllib.request.Request(f"{base}/api/kernels?token={TOKEN}", data=b"{}", method="POST")
        kernel = json.load(urllib.request.urlopen(request, timeout=60))
        server = next(p for p in psutil.process_iter(["cmdline"])
                      if f"--ServerApp.root_dir={tmp_path}" in (p.info["cmdline"] or []))
        family = [server, *server.children(recursive=True)]
        assert len(family) >= 2, "the kernel did not start"
        for process in family:
            process.suspend()  # a stopped process answers no request to stop
    _, alive = psutil.wait_procs(family, timeout=5)
    assert alive == [], f"left running: {[p.pid for p in alive]} (kernel {kernel['id']})"
