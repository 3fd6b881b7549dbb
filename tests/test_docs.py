"""The documentation as reference: every benchmark log is indexed with the commit that
added it, and the paths the developer guide and the performance notes name exist."""
import os
import re
import subprocess

import pytest

from conftest import ROOT

BENCH = os.path.join(ROOT, "docs", "bench")


def _read(*parts) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def _index() -> dict[str, str]:
    """log file -> commit, from docs/bench/README.md's table."""
    rows = re.findall(r"^\| `([^`]+\.txt)` \| ([0-9a-f]{7,}) \|", _read("docs", "bench", "README.md"), re.M)
    return dict(rows)


def test_every_benchmark_log_is_indexed_and_every_index_row_has_its_log():
    logs = {name for name in os.listdir(BENCH) if name.endswith(".txt")}
    assert logs and set(_index()) == logs


def test_each_log_is_indexed_with_the_commit_that_added_it():
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    for name, commit in _index().items():
        added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", f"docs/bench/{name}"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        if not added:  # not committed yet: its row must name a commit that exists
            subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, check=True)
            continue
        assert added[-1].startswith(commit), (name, commit, added)


@pytest.mark.parametrize("doc", ["docs/DEVELOPING.md", "docs/PERFORMANCE.md", "docs/design/overhead-history.md"])
def test_the_paths_a_document_names_exist(doc):
    text = _read(*doc.split("/"))
    named = set(re.findall(r"`((?:bench|docs|js|tests|gwatch_nb|native|examples)/[\w./-]*[\w/])`", text))
    named |= set(re.findall(r"\b((?:docs|bench)/[\w-]+(?:/[\w.-]+)*\.(?:md|py|sh|txt))\b", text))
    assert named, doc
    missing = sorted(p for p in named if not os.path.exists(os.path.join(ROOT, p)))
    assert not missing, f"{doc} names paths that do not exist: {missing}"


def test_the_developer_guide_lists_every_front_end_source():
    guide = _read("docs", "DEVELOPING.md")
    sources = [name for name in os.listdir(os.path.join(ROOT, "js", "src")) if name.endswith(".ts")]
    assert sources and [name for name in sources if f"`{name}`" not in guide] == []
