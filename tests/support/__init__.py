"""Helpers the tests share: synthetic traces, the browser harness, a JupyterLab server."""
