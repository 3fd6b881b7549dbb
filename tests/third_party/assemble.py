"""Build the corpus's kernel modules from the projects' own files, which stay out of this
repository: each `Source` (sources/*.py) names a file at a pinned commit and the top-level
definitions to take from it; marks/<name>.json holds the lines this project changes in
them (the gwatch markers, imports, an autotune decorator swapped for one config).

  python tests/third_party/assemble.py               # every source into .corpus/marked/ and unmarked/
  python tests/third_party/assemble.py pristine NAME # NAME's taken code, unmarked, to edit by hand
  python tests/third_party/assemble.py record NAME   # keep the hand edits of NAME in marks/

A project's file is read from its `fetch` mirror (/work/.mirror/OWNER+REPO/repo), else from
.corpus/original/OWNER+REPO/COMMIT/PATH (where a repository too large to mirror was read
file by file)."""
from __future__ import annotations

import ast
import difflib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIRRORS = os.environ.get("GWATCH_MIRRORS", "/work/.mirror")
sys.path[:0] = [os.path.dirname(HERE)]

import third_party as corpus  # noqa: E402
from third_party import BUILT  # noqa: E402

MARKED = os.path.join(BUILT, "marked")
UNMARKED = os.path.join(BUILT, "unmarked")


def original(repo: str, commit: str, path: str) -> str:
    mirror = os.path.join(MIRRORS, repo.replace("/", "+"), "repo")
    if os.path.isdir(mirror):
        done = subprocess.run(["git", "--git-dir", mirror, "show", f"{commit}:{path}"], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout
    kept = os.path.join(BUILT, "original", repo.replace("/", "+"), commit, path)
    if os.path.exists(kept):
        with open(kept) as f:
            return f.read()
    raise SystemExit(f"{repo}@{commit[:12]}:{path}: not here; fetch github:{repo} (or keep the file at {kept})")


def _definitions(text: str, names: list[str], where: str) -> list[str]:
    """The source of each named top-level definition (with its decorators) or assignment."""
    tree = ast.parse(text)
    lines = text.splitlines()
    found = {}
    for node in tree.body:
        targets = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else \
            [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        for name in targets:
            found[name] = "\n".join(lines[first - 1:node.end_lineno])
    missing = [name for name in names if name not in found]
    if missing:
        raise SystemExit(f"{where}: no top-level {', '.join(missing)}")
    return [found[name] for name in names]


def _imports(text: str) -> list[str]:
    lines = text.splitlines()
    return ["\n".join(lines[n.lineno - 1:n.end_lineno]) for n in ast.parse(text).body
            if isinstance(n, (ast.Import, ast.ImportFrom))]


def pristine(source) -> str:
    """The taken code, as the project wrote it: its file's imports, then each definition."""
    text = original(source.repo, source.commit, source.path)
    parts = [f"# {source.name}: taken by tests/third_party/assemble.py from {source.repo}@{source.commit}:"
             f"{source.path} ({source.licence}). Not part of this repository.", "\n".join(_imports(text))]
    for taken in source.take:
        path, _, names = taken.rpartition(":") if ":" in taken else (source.path, "", taken)
        other = text if path == source.path else original(source.repo, source.commit, path)
        parts.extend(_definitions(other, names.split(), f"{source.repo}:{path}"))
    return "\n\n\n".join(parts) + "\n"


def _marks_path(name: str) -> str:
    return os.path.join(HERE, "marks", name + ".json")


def marked(source) -> str:
    """The pristine code with this project's edits applied."""
    lines = pristine(source).splitlines(keepends=True)
    if not os.path.exists(_marks_path(source.name)):
        return "".join(lines)
    with open(_marks_path(source.name)) as f:
        edits = json.load(f)["edits"]
    out, at = [], 0
    for first, last, new in edits:  # replace pristine lines [first, last) by new
        out.extend(lines[at:first])
        out.extend(new)
        at = last
    return "".join(out + lines[at:])


def _module_path(name: str, folder: str = MARKED) -> str:
    return os.path.join(folder, name + ".py")


_MARKER_LINE = re.compile(r"^\s*scope_(start|end)\(\s*\w+\s*\)\s*(#.*)?$")


def unmarked(text: str) -> str:
    """The marked module with its marker lines taken out: the kernel as the project wrote it,
    for tracing with automatic sites only."""
    return "".join(line for line in text.splitlines(keepends=True) if not _MARKER_LINE.match(line))


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def build_all() -> None:
    kept = []
    for source in corpus.all_sources():
        text = marked(source)
        if _edited_by_hand(source.name, text):
            kept.append(source.name)
            continue
        _write(_module_path(source.name), text)
        _write(_module_path(source.name, UNMARKED), unmarked(text))
    for top in (MARKED, UNMARKED):
        for folder, _, _ in os.walk(top):
            init = os.path.join(folder, "__init__.py")
            if not os.path.exists(init):
                _write(init, "")
    print(f"{len(corpus.all_sources()) - len(kept)} modules in {MARKED} and {UNMARKED}")
    for name in kept:
        print(f"{name}: edited since its marks were kept, left as it is (assemble.py record {name})")


def _edited_by_hand(name: str, text: str) -> bool:
    """Whether the built module differs from its marks and was changed after they were kept:
    hand edits not yet recorded, which a build must not overwrite."""
    path, marks = _module_path(name), _marks_path(name)
    if not os.path.exists(path):
        return False
    with open(path) as f:
        if f.read() == text:
            return False
    return not os.path.exists(marks) or os.path.getmtime(path) > os.path.getmtime(marks)


def record(name: str) -> None:
    source = corpus.by_name(name)
    before = pristine(source).splitlines(keepends=True)
    with open(_module_path(name)) as f:
        after = f.read().splitlines(keepends=True)
    edits = [[i1, i2, after[j1:j2]] for tag, i1, i2, j1, j2 in
             difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes() if tag != "equal"]
    _write(_marks_path(name), json.dumps({"edits": edits}, indent=1) + "\n")
    assert marked(source) == "".join(after)
    print(f"{name}: {len(edits)} edits kept in {os.path.relpath(_marks_path(name), ROOT)}")


def main(argv: list[str]) -> None:
    if not argv:
        build_all()
    elif argv[0] == "pristine":
        _write(_module_path(argv[1]), pristine(corpus.by_name(argv[1])))
        print(_module_path(argv[1]))
    elif argv[0] == "record":
        record(argv[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
