"""A kernel's scope markers as source positions, `(kind, scope_id, file, line)`, from either of
two places: the PTX Triton made (each `// gwatch.scope_start N` sentinel takes the `.loc` before
it), or the kernel's Python source (calls to `scope_start` / `scope_end` found with `ast`),
which still knows the markers Triton drops from warp-specialized loops."""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass, field

from gwatch_nb._native import FORMAT
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.ptx_flow import PtxFlow

#: A PTX file declaration (number, path) and a PTX line location (file number, line).
FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,.*)?$', re.M)
LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\b")
_MARKERS = {"scope_start": "start", "scope_end": "end"}
# The sentinel a marker leaves in the PTX (its text is the format header's): "start"/"end", then the id.
#: A sentinel in the PTX: its kind's text (group 1), then its scope id (group 2).
SENTINEL = re.compile("(%s|%s) (\\d+)" % (re.escape(FORMAT["MARKER_START"]), re.escape(FORMAT["MARKER_END"])))


@dataclass(frozen=True, order=True)
class Marker:
    file: str
    line: int
    kind: str      # "start" or "end"
    scope_id: int
    loops: int | None = field(default=None, compare=False)  # source loops around it (None: not known, from PTX)


def ptx_start_depths(ptx: str) -> dict[int, list[int]]:
    """Per scope, the loop depth of each start sentinel in the PTX (sorted; a sentinel copied by
    the compiler counts once per copy): how many natural loops of the PTX's control flow hold
    it. Each copy runs once per iteration of its loops, which is what the ptx tier records."""
    lines = ptx.splitlines()
    depth = PtxFlow(lines).depth
    out: dict[int, list[int]] = {}
    for n, text in enumerate(lines):
        sentinel = SENTINEL.search(text)
        if sentinel and sentinel.group(0).startswith(FORMAT["MARKER_START"]):
            out.setdefault(int(sentinel.group(2)), []).append(depth[n])
    return {scope: sorted(depths) for scope, depths in out.items()}


def from_ptx(ptx: str) -> list[Marker]:
    """The distinct markers of the PTX in source order (a sentinel the pipeliner copied is one marker)."""
    files = {int(number): path for number, path in FILE.findall(ptx)}
    found, loc = set(), None
    for number, text in enumerate(ptx.splitlines(), 1):
        at = LOC.match(text)
        if at:
            loc = (int(at.group(1)), int(at.group(2)))
            continue
        sentinel = SENTINEL.search(text)
        if sentinel is None:
            continue
        kind = "start" if sentinel.group(0).startswith(FORMAT["MARKER_START"]) else "end"
        if loc is None or loc[0] not in files:
            raise SassRewriteError(f"PTX line {number}: {sentinel.group(0)} has no .loc of a known file before it")
        found.add(Marker(files[loc[0]], loc[1], kind, int(sentinel.group(2))))
    return sorted(found)


def from_source(kernel) -> list[Marker]:
    """The markers written in a @triton.jit kernel (or a plain function) body, and in the
    @triton.jit functions it calls by name (Triton inlines them: their markers are the
    kernel's), in source order; a marker in a function called inside a loop counts that loop.
    Their ids must be integer literals (or names of integer constants of their module)."""
    fn = getattr(kernel, "fn", kernel)
    found: set[Marker] = set()
    _collect(fn, 0, found, set(), required=True)
    return sorted(found)


def _collect(fn, outer_loops: int, found: set, seen: set, required: bool = False) -> None:
    if fn in seen:
        return
    seen.add(fn)
    try:
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn)
    except (OSError, TypeError) as error:
        if not required:
            return  # a called function with no source adds no markers
        raise SassRewriteError(f"kernel {getattr(fn, '__name__', fn)}: no Python source to read markers from "
                               f"({error})") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    constants = getattr(fn, "__globals__", {})
    for node, loops in _calls(tree):
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if callee in _MARKERS:
            line = first + node.lineno - 1
            found.add(Marker(path, line, _MARKERS[callee], _literal_id(node, constants, fn.__name__, line),
                             outer_loops + loops))
        elif isinstance(node.func, ast.Name) and _is_jit_function(constants.get(node.func.id)):
            _collect(constants[node.func.id].fn, outer_loops + loops, found, seen)


def _is_jit_function(value) -> bool:
    return type(value).__name__ == "JITFunction" and callable(getattr(value, "fn", None))


def _calls(node: ast.AST, loops: int = 0):
    """Every call under `node`, with the number of `for` / `while` loops around it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call):
            yield child, loops
        inner = loops + (isinstance(node, (ast.For, ast.While)) and child not in (getattr(node, "iter", None),
                                                                                  getattr(node, "test", None)))
        yield from _calls(child, inner)


def _literal_id(call: ast.Call, constants: dict, kernel: str, line: int) -> int:
    argument = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if isinstance(argument, ast.Constant) and type(argument.value) is int:
        return argument.value
    if isinstance(argument, ast.Name) and type(constants.get(argument.id)) is int:
        return constants[argument.id]
    raise SassRewriteError(f"kernel {kernel}: the marker on line {line} needs one integer scope id, "
                           f"written as a literal or a module constant")
