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


@pytest.mark.parametrize("doc", ["docs/DEVELOPING.md", "docs/PERFORMANCE.md", "docs/design/overhead-history.md", "README.md",
                                 "docs/FORMAT.md", "docs/sass/README.md", "docs/sass/sites.md", "docs/sass/probes.md",
                                 "docs/stalls.md"])
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


def _section(text: str, heading: str) -> str:
    """The part of a markdown text under `heading` (a whole heading line), up to the next heading
    of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n")
    ends = [m.start() for m in re.finditer(r"^#{1,%d} " % len(level), text[start + 1:], re.M)][1:]
    return text[start:start + 1 + ends[0]] if ends else text[start:]


def _balanced_call(text: str, at: int) -> str:
    """The argument text of the call whose opening parenthesis is at `at`."""
    depth = 0
    for k in range(at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return text[at + 1:k]
    raise AssertionError(f"unbalanced call at {at}")


def test_every_magic_line_the_readme_shows_parses():
    pytest.importorskip("IPython")
    from IPython.core.magic_arguments import parse_argstring
    from gwatch_nb.magic import GwatchMagics
    from gwatch_nb.options import tier_choices
    lines = re.findall(r"^%%gwatch (.+)$", _read("README.md"), re.M)
    assert len(lines) >= 4 and any("-t sass" in line for line in lines) and any("--auto" in line for line in lines)
    for line in lines:
        args = parse_argstring(GwatchMagics.gwatch, line)  # a UsageError names a flag that does not exist
        assert args.tier in tier_choices(), line


def test_every_magic_flag_the_readme_names_exists():
    pytest.importorskip("IPython")
    from gwatch_nb.magic import FLAGS, GwatchMagics
    flags = {flag for action in GwatchMagics.gwatch.parser._actions for flag in action.option_strings}
    readme = _read("README.md")
    text = " ".join(_section(readme, "## In a notebook").split() + _section(readme, "## The sass tier (sm_90)").split())
    named = set(re.findall(r"`(--?[a-z][\w-]*)", text))
    assert {"-t", "--auto", "-s", "-c", "-l", "--no-widget"} <= named
    assert named <= flags, named - flags
    assert set(FLAGS.values()) <= flags  # the flags the magic's messages use are its own
    for tier in re.findall(r"`-t ([\w|]+)`", text):
        assert set(tier.split("|")) <= set(GwatchMagics.gwatch.parser._option_string_actions["-t"].choices), tier


def test_every_do_trace_keyword_the_readme_uses_exists():
    import inspect
    from gwatch_nb.api import do_trace
    from gwatch_nb.options import tier_choices
    readme = _read("README.md")
    calls = [_balanced_call(readme, m.end() - 1) for m in re.finditer(r"\bdo_trace\(", readme)]
    used = {name for call in calls for name in re.findall(r"\b(\w+)=(?!=)", call)}
    assert {"instrumentation_tier", "scope_name_map", "kernel_name_pattern"} <= used
    assert used <= set(inspect.signature(do_trace).parameters), used - set(inspect.signature(do_trace).parameters)
    tiers = set(re.findall(r'instrumentation_tier="(\w+)"', readme))
    assert "sass" in tiers and tiers <= set(tier_choices())
    prose = "".join(_section(readme, heading) for heading in (
        "## In Python", "## The sass tier (sm_90)", "## Configurations, autotuning and what tracing cost"))
    named = set(re.findall(r"`(\w+)=", prose))  # such as `capacity=`, `auto=True`
    assert {"auto", "capacity", "scopes"} <= named
    assert named <= set(inspect.signature(do_trace).parameters), named - set(inspect.signature(do_trace).parameters)


def test_the_trace_sites_table_lists_every_column():
    from gwatch_nb.sass.instrument import SITE_COLUMNS
    table = _section(_read("docs", "sass", "sites.md"), "## `trace.sites`")
    documented = [name for row in re.findall(r"^\| (`.+?) \|", table, re.M) for name in re.findall(r"`(\w+)`", row)]
    assert sorted(documented) == sorted(SITE_COLUMNS + ("name",))


def test_the_automatic_scope_ids_the_documents_give_are_the_code_s():
    from gwatch_nb.sass.instrument import AUTO_SCOPE_BASE
    for doc in (("docs", "FORMAT.md"), ("docs", "sass", "sites.md")):
        given = re.findall(r"(\d+),? \(?`AUTO_SCOPE_BASE`", " ".join(_read(*doc).split()))
        assert given and set(given) == {str(AUTO_SCOPE_BASE)}, (doc, given)


def test_the_probe_constants_probes_md_gives_are_the_code_s():
    from gwatch_nb._native import FORMAT
    from gwatch_nb.sass import probes
    known = {**FORMAT, **{k: v for k, v in vars(probes).items() if k.isupper() and isinstance(v, int)}}
    text = " ".join(_read("docs", "sass", "probes.md").split())
    pairs = re.findall(r"(\d+)(?: [a-z]+){0,2} \(`([A-Z_]+)`\)", text)
    pairs += [(number, name) for name, number in re.findall(r"`([A-Z_]+)` \((\d+)\)", text)]
    assert len(pairs) >= 9, pairs
    for number, name in pairs:
        assert name in known, f"probes.md names {name}, which is no constant of probes.py or the format"
        assert known[name] == int(number), f"probes.md says {name} is {number}; the code says {known[name]}"
