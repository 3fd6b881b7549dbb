"""What a new user meets first: `make` says what it installs while it installs, git does
not offer the virtual environment or the quick start's outputs for a commit, and the
README's claims about markers match what the decoder does."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from support.traces import synthetic_trace

GENERATED = [".venv/bin/python", "trace.html", "trace.json", "trace.perfetto.json", "attention.perfetto.json"]


def test_git_ignores_the_venv_and_the_quick_start_outputs():
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "check-ignore", "--no-index", *GENERATED], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.split() == GENERATED
    # The sources beside them stay tracked.
    kept = subprocess.run(["git", "check-ignore", "--no-index", "README.md", "examples/attention.py"], cwd=ROOT,
                          capture_output=True, text=True)
    assert kept.stdout == ""


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_announces_each_install_step_and_shows_pip_progress(tmp_path):
    venv = tmp_path / "venv"
    # --no-print-directory: under `make test` this make is a sub-make, which would name its folder
    plan = subprocess.run(["make", "-n", "--no-print-directory", f"VENV={venv}", "trace"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    steps = re.findall(r'^echo "== (\d)/4 ', plan.stdout, re.M)
    assert steps == ["1", "2", "3", "4"]
    installs = [line for line in plan.stdout.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert len(installs) == 2 and all("-q" not in line.split() for line in installs)
    assert plan.stdout.strip().splitlines()[-1].endswith("--report trace.html")


def test_readme_describes_crossed_markers_as_the_decoder_treats_them():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert re.search(r"\(`crossed`\) are kept as intervals", readme)
    assert "device machine" not in readme
    # A crosses B: both are intervals, and the trace says they crossed.
    trace = synthetic_trace([((0, 0, 0), 0, 0, 0, 100, [(10, 1, False), (20, 2, False), (30, 1, True),
                                                        (40, 2, True)])], {1: "A", 2: "B"})
    assert sorted(trace.df.scope.astype(str)) == ["A", "B"]
    assert [w.kind for w in trace.warnings] == ["crossed"]
