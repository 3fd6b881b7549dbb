"""Runs tests/interpreter in a fresh process started with TRITON_INTERPRET=1.

Triton decides at import time whether its own library functions run on the
interpreter, so the interpreter tier works only in a process that set the variable
before importing triton, as a user without a GPU does (and as the quick start does)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1",
                    reason="TRITON_INTERPRET=1 is set: tests/interpreter runs in this process")
def test_interpreter_suite():
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-m", "pytest", os.path.join(HERE, "interpreter"), "-q",
                           "-p", "no:cacheprovider"], env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
