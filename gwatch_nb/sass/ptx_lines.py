"""Which PTX instruction each SASS instruction of a kernel came from, and so between which
marker sentinels it stood: the kernel's PTX (with its sentinels) assembled again with every
instruction given a `.loc` of its own line in that PTX, in a file of its own (`PTX_FILE`).
ptxas's line information does not steer its code: where the copy's `.text` equals the cubin
the kernel runs, the copy's line table is the running kernel's, at the grain of one PTX
instruction (docs/sass/sites.md, "Lines from the PTX"). Where the texts differ (the sentinels
changed Triton's code, and the PTX Triton loaded cannot take them either), there is no table
and the source lines place the scopes.

Its scopes are the sentinels' own, one per start sentinel (a `tl.static_range` body unrolled
four times is four starts and four ends), so each copy of a scope is placed on its own, as
often as the ptx tier records it."""
from __future__ import annotations

import difflib
import hashlib
import os
import re
import threading
from dataclasses import dataclass

from gwatch_nb._native import FORMAT
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.cache import kept
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.lines import Location, line_table
from gwatch_nb.sass.markers import FILE, LOC, SENTINEL
from gwatch_nb.sass.ptx_flow import FUNCTION, PtxFlow
from gwatch_nb.sass.sites import Scope

#: The file name the copy's line table gives every instruction.
PTX_FILE = "gwatch.ptx"

# An instruction: an optional guard, an opcode, operands, a semicolon (directives start with a dot).
_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?[a-z][\w.]*(?:\s[^;]*)?;")

_lock = threading.Lock()
_tables: dict[str, "PtxLines | None"] = {}


@dataclass(frozen=True)
class PtxLines:
    locations: list[Location | None]  # per SASS instruction: PTX_FILE and the 1-based PTX line it came from
    copies: list[Scope]               # every start sentinel's scope: the PTX lines it runs to its end
    depths: dict[int, int]            # per 1-based PTX line: the PTX loops around it
    # start lines of copies some iterations of a loop around them skip (an `if` in the loop body)
    conditional: frozenset[int]
    # per copy, the other copies whose start runs as often as its own code, nearest first: where
    # ptxas left a copy no instruction, its readings go at theirs (sites.place); none where its
    # own lines do not all run as often as its start
    same_count: list[tuple[int, ...]]


def self_lined(ptx: str) -> str:
    """The PTX with Triton's `.loc`s taken out and one `.loc` before each instruction naming that
    instruction's own line (1-based, in `ptx`) of a new file, declared after the last one (or
    before the first function where there is none)."""
    lines = ptx.splitlines()
    files = [n for n, text in enumerate(lines) if FILE.match(text)]
    number = max((int(FILE.match(lines[n]).group(1)) for n in files), default=0) + 1
    declare_after = files[-1] if files else None
    declaration = f'.file {number} "{PTX_FILE}"'
    out, in_function = [], False
    for n, text in enumerate(lines):
        if LOC.match(text):
            continue
        if FUNCTION.match(text):
            if declare_after is None:
                out.append(declaration)
                declare_after = -1
            in_function = True
        if in_function and _INSTRUCTION.match(text):
            out.append(f"\t.loc {number} {n + 1} 0")
        out.append(text)
        if n == declare_after:
            out.append(declaration)
    return "\n".join(out) + "\n"


def sentinel_copies(ptx: str, flow: PtxFlow | None = None) -> list[Scope]:
    """One scope per start sentinel of the PTX (a copy Triton made of a marker is a scope of its
    own): the PTX lines its execution runs through before a sentinel of its id (its end, or
    the next copy's start), following the control flow, so a loop LLVM laid out with its tail
    above its header still ends where it runs to. It does not enter a loop that holds other
    sentinels of its id and not itself: that loop is the scope's own, the pipeliner's copy
    before it stops at its door. `loops`: the PTX loops around its start. `flow`: the PTX's
    control flow, where already made."""
    lines = ptx.splitlines()
    flow = flow or PtxFlow(lines)
    sentinels = [(n, found.group(1) == FORMAT["MARKER_START"], int(found.group(2)))
                 for n, text in enumerate(lines) if (found := SENTINEL.search(text))]
    at_sentinel: dict[int, set[int]] = {}
    for n, _, scope in sentinels:
        at_sentinel.setdefault(scope, set()).add(n)
    copies = []
    for n, is_start, scope in sentinels:
        if not is_start:
            continue
        mine = {flow.block_of[m] for m in at_sentinel[scope]}
        closed = set().union(*[loop for loop in flow.loops if flow.block_of[n] not in loop and loop & mine])
        region, stack = set(), [n + 1]
        while stack:
            line = stack.pop()
            while line < len(lines) and line not in region and line not in at_sentinel[scope]:
                block = flow.block_of[line]
                if block in closed:
                    break
                region.add(line)
                if line + 1 < flow.ends[block]:
                    line += 1
                    continue
                stack.extend(flow.starts[b] for b in flow.successors[block])
                break
        numbers = frozenset(m + 1 for m in region)
        copies.append(Scope(scope, PTX_FILE, n + 1, max(numbers, default=n + 1) + 1, flow.depth[n], numbers))
    return copies


def table(cubin: bytes, kernel: str, ptx: str, assemble, identity: str,
          loaded_ptx: str | None = None) -> PtxLines | None:
    """The PTX-line table of `kernel` in `cubin`, whose sentinels `ptx` holds, or None where
    it cannot be made. `assemble(ptx)` makes a cubin with the kernel's own ptxas and options,
    which `identity` names (triton_compat.ptxas_identity); the table holds only where the
    self-lined copy's text is the cubin's. The copy is made of
    `ptx` itself, else, where that text differs (the sentinels' inline assembly renames
    registers, which can change ptxas's code) and `loaded_ptx` (the PTX the cubin was built
    from) is given, of that PTX with the sentinels carried over as comments (`with_sentinels`).
    Kept per PTX and cubin, in the process and under the cache root (a copy costs one ptxas run)."""
    key = hashlib.sha256((ptx + (loaded_ptx or "") + identity + kernel).encode()
                         + hashlib.sha256(cubin).digest()).hexdigest()
    with _lock:
        if key in _tables:
            return _tables[key]
    found = _from(cubin, kernel, ptx, assemble, identity)
    if found is None and loaded_ptx is not None:
        carried = with_sentinels(loaded_ptx, ptx)
        found = _from(cubin, kernel, carried, assemble, identity) if carried is not None else None
    with _lock:
        _tables[key] = found
    return found


def _from(cubin: bytes, kernel: str, marked: str, assemble, identity: str) -> PtxLines | None:
    """The table from the PTX `marked` (with sentinels), where its self-lined copy has the cubin's text."""
    copy = _cached_copy(marked, assemble, identity)
    try:
        same = copy is not None and Cubin.parse(copy).text(kernel) == Cubin.parse(cubin).text(kernel)
    except Exception:  # a copy ptxas made without this kernel: no table
        same = False
    try:
        locations = line_table(copy).get(kernel) if same else None
    except SassRewriteError:  # no line program (line information turned off): no table
        return None
    if locations is None:
        return None
    flow = PtxFlow(marked.splitlines())
    copies = sentinel_copies(marked, flow)
    return PtxLines([loc if loc is not None and os.path.basename(loc.file) == PTX_FILE else None for loc in locations],
                    copies, {n + 1: d for n, d in enumerate(flow.depth)},
                    frozenset(c.start_line for c in copies if not flow.every_iteration(c.start_line - 1)),
                    same_count(copies, flow))


def same_count(copies: list[Scope], flow: PtxFlow) -> list[tuple[int, ...]]:
    """Per copy, the other copies whose start sentinel runs as often as every line of it
    (flow.same_count), nearest in the PTX first."""
    out = []
    for k, copy in enumerate(copies):
        start = copy.start_line - 1
        straight = all(flow.same_count(start, line - 1) for line in copy.lines)
        out.append(tuple(sorted((j for j, other in enumerate(copies) if j != k and straight
                                 and flow.same_count(start, other.start_line - 1)),
                                key=lambda j: abs(copies[j].start_line - copy.start_line))))
    return out


_VIRTUAL = re.compile(r"%[a-z]+\d+|<\d+>")
_ASM_BEGIN, _ASM_END = "// begin inline asm", "// end inline asm"


def with_sentinels(loaded: str, marked: str) -> str | None:
    """`loaded` (a kernel's PTX without sentinels) with the sentinels of `marked` (the same
    kernel compiled with them) as comment lines where they stand, or None where the two cannot
    be aligned. Their lines are matched by shape (registers renumbered, `.loc`s and the
    sentinels' inline assembly left out), in order: the inline assembly can make LLVM order a
    few instructions otherwise. A sentinel goes before the loaded line matching the line after
    it (or after the one matching the line before it); where neither matches, or under 95% of
    the lines match, there is no table."""
    source = loaded.splitlines()
    plain = [n for n, text in enumerate(source) if not LOC.match(text)]
    lines, sentinels, kept = marked.splitlines(), [], []
    n = 0
    while n < len(lines):
        text = lines[n]
        if text.strip() == _ASM_BEGIN:
            end = next((m for m in range(n, len(lines)) if lines[m].strip() == _ASM_END), None)
            found = [m for m in range(n, end or n) if SENTINEL.search(lines[m])]
            if end is not None and found:
                sentinels.append((len(kept), lines[found[0]].strip()))
                n = end + 1
                continue
        if not LOC.match(text):
            kept.append(text)
        n += 1
    shape = lambda text: " ".join(_VIRTUAL.sub("%", text.split("//")[0]).split())
    matcher = difflib.SequenceMatcher(None, [shape(t) for t in kept], [shape(source[n]) for n in plain],
                                      autojunk=False)
    matched: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        matched.update((a + k, plain[b + k]) for k in range(size))
    if len(matched) < 0.95 * max(len(kept), len(plain)):
        return None
    place: dict[int, list[str]] = {}
    for position, comment in sentinels:
        if position in matched:
            at = matched[position]
        elif position - 1 in matched:
            at = matched[position - 1] + 1
        elif position == len(kept):
            at = len(source)
        else:
            return None
        place.setdefault(at, []).append(comment)
    out = []
    for n, text in enumerate(source):
        out.extend(f"\t{c}" for c in place.get(n, []))
        out.append(text)
    out.extend(f"\t{c}" for c in place.get(len(source), []))
    return "\n".join(out) + "\n"


def _cached_copy(ptx: str, assemble, identity: str) -> bytes | None:
    """The self-lined copy of `ptx`, assembled (None: ptxas refused it), kept under the cache root."""
    lined = self_lined(ptx)

    def make() -> bytes:
        try:
            return assemble(lined)
        except Exception:  # ptxas refused the copy (kept as nothing): the source lines place the scopes
            return b""
    return kept("ptx-lines", hashlib.sha256((lined + identity).encode()).hexdigest() + ".cubin", make) or None
