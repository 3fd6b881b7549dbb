"""Triton kernels other people wrote, for proving the GPU tiers on code this project did not.

Their code stays out of this repository. Each module of sources/ names, per project, the
files it takes kernels from (`Source`: repository, pinned commit, path, licence, the
definitions taken) and how to launch each kernel on realistic inputs (`Case`); marks/ holds
the lines this project adds (gwatch markers placed as a user would: the whole kernel, its
loads, dots, reductions and stores, each loop's body, every scope closed before an early
`return`). assemble.py builds the marked modules into .corpus/marked/ from the projects'
files; run_corpus.py traces every case on every GPU tier; docs/sass/corpus.md holds what
the H200 measured."""
from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from dataclasses import dataclass, field
from typing import Callable

BUILT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".corpus")


@dataclass(frozen=True)
class Source:
    name: str       # "<project>/<file>": where its marked module is built (marked/<project>/<file>.py)
    repo: str       # "owner/name" on GitHub
    commit: str     # the pinned commit, 40 hex digits
    path: str       # the file in the repository
    licence: str
    take: tuple     # top-level names to take, space-separated; "other/path.py:names" takes from another file


@dataclass(frozen=True)
class Case:
    name: str        # "<project>/<kernel>", unique in the corpus
    source: str      # the Source.name its kernel comes from ("": generated at run time, unmarked)
    pattern: str     # regex (re.search) naming the launched kernel, as a user passes to %%gwatch
    scopes: dict     # scope id -> name, every marker written in the kernel
    setup: Callable[[object, str], Callable[[], tuple]] = field(repr=False)
    # setup(module, device) -> launch; launch() runs the kernel once on inputs setup made and
    # returns its output tensors. `module` is the marked module of `source`.
    exact: bool = True  # False where float atomics make the sum's order vary between runs

    def launcher(self, device: str, marked: bool = True) -> Callable[[], tuple]:
        return self.setup(built_module(self.source, marked) if self.source else None, device)


def built_module(source: str, marked: bool = True):
    """The module assemble.py built for a Source name: with this project's markers, or with
    its marker lines taken out."""
    if BUILT not in sys.path:
        sys.path.insert(0, BUILT)
    return importlib.import_module(("marked." if marked else "unmarked.") + source.replace("/", "."))


def _project_modules():
    from . import sources
    for info in sorted(pkgutil.iter_modules(sources.__path__), key=lambda i: i.name):
        yield importlib.import_module(f"{sources.__name__}.{info.name}")


def all_sources() -> list[Source]:
    return [s for module in _project_modules() for s in getattr(module, "SOURCES", [])]


def by_name(name: str) -> Source:
    found = [s for s in all_sources() if s.name == name]
    if not found:
        raise SystemExit(f"no Source named {name!r} in tests/third_party/sources/")
    return found[0]


def cases() -> list[Case]:
    """Every case of every project, in project order; names are unique."""
    found = [c for module in _project_modules() for c in getattr(module, "CASES", [])]
    names = [case.name for case in found]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"corpus case names used twice: {', '.join(duplicated)}")
    return found
