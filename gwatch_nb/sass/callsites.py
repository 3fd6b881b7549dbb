"""Where a kernel calls the code an instruction came from, when the line table gives no
inlining chain (Triton 3.6): library code, or a `@triton.jit` helper the kernel calls (in its
own file or another). The function around the instruction's line in its file (read with
`ast`), every function of that file that names it (a reduction names its combine function),
and so on outwards, until names the kernel's own source calls (`tl.max(...)` calls `max`)."""
from __future__ import annotations

import ast
import functools
import inspect
import os
import textwrap

from gwatch_nb.errors import SassRewriteError


def _callee(node: ast.Call) -> str | None:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)


@functools.lru_cache(maxsize=64)
def _functions(path: str) -> tuple[tuple[tuple[int, int, str], ...], dict[str, frozenset[str]]]:
    """((first line, last line, name) of each function, name -> names it refers to) of a file."""
    try:
        with open(path) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return (), {}
    spans, refers = [], {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.append((node.lineno, node.end_lineno, node.name))
            refers[node.name] = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name)) | \
                frozenset(n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute))
    return tuple(sorted(spans, key=lambda s: s[1] - s[0])), refers


class CallSites:
    """Maps a (file, line) of library code to the lines of one kernel that may have inlined it."""

    def __init__(self, kernel):
        fn = getattr(kernel, "fn", kernel)
        try:
            lines, first = inspect.getsourcelines(fn)
            self.file = inspect.getsourcefile(fn)
        except (OSError, TypeError) as error:
            raise SassRewriteError(f"kernel {getattr(fn, '__name__', fn)}: no Python source to read its calls from "
                                   f"({error})") from None
        self.lines = (first, first + len(lines) - 1)  # the kernel function's own, in self.file
        self.calls: dict[str, list[int]] = {}
        for node in ast.walk(ast.parse(textwrap.dedent("".join(lines)))):
            if isinstance(node, ast.Call) and _callee(node):
                self.calls.setdefault(_callee(node), []).append(first + node.lineno - 1)
        self._known: dict[tuple[str, int], tuple[int, ...]] = {}

    def in_kernel(self, path: str, line: int) -> bool:
        """Whether (path, line) is in the kernel function's own body."""
        return os.path.basename(path) == os.path.basename(self.file) and self.lines[0] <= line <= self.lines[1]

    def lines_calling(self, path: str, line: int) -> tuple[int, ...]:
        """Kernel lines whose calls reach the function of `path` around `line` (empty: unknown,
        or a line of the kernel itself)."""
        if (path, line) not in self._known:
            self._known[path, line] = self._lines_calling(path, line)
        return self._known[path, line]

    def _lines_calling(self, path: str, line: int) -> tuple[int, ...]:
        if self.in_kernel(path, line):
            return ()
        spans, refers = _functions(path)
        inner = next((name for start, end, name in spans if start <= line <= end), None)
        if inner is None:
            return ()
        reached, frontier = {inner}, [inner]
        while frontier:  # functions of the file that name one already reached
            name = frontier.pop()
            for other, names in refers.items():
                if name in names and other not in reached:
                    reached.add(other)
                    frontier.append(other)
        return tuple(sorted({at for name in reached for at in self.calls.get(name, ())}))
