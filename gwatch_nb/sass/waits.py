"""Automatic sites: every blocking wait and every loop of a kernel's SASS, each named by its kind
and the source line its instructions' line info gives it, with the instruction indices a
reading goes before at its start and at its end (docs/sass/sites.md).

Waits:
- ``mbarrier``: ``SYNCS.PHASECHK.TRANS64.TRYWAIT P, [bar], phase`` (an mbarrier phase wait: a
  TMA load landing, a producer's arrival) and the ``@!P BRA`` to its out-of-line retry loop;
  it ends where the retry's branch back joins the fast path, just after that ``@!P BRA``. The
  retry loop's own TRYWAIT is part of the same wait, not another one.
- ``wgmma``: ``WARPGROUP.DEPBAR.LE gsb0, N`` (warp-group MMAs in flight ≤ N).
- ``barrier``: ``BAR.SYNC`` (and ``BAR.RED``), a CTA or named barrier.
- ``async copy``: ``DEPBAR.LE SBn, N`` (cp.async / bulk-copy groups in flight ≤ N; ``LDGDEPBAR``
  only commits a group and waits for nothing).
The kernel: ``kernel``, a reading before its first instruction and one before every ``EXIT``
(a guarded ``EXIT``'s reading runs on the warps that go on as well: a warp's last one is its exit).
Loops: one per natural loop of cfg.py, a reading at the start of the header block (every
entry, first and again) and one before the back-edge branch of each latch. Single-block loops
that only retry an mbarrier wait are that wait's, not loops of their own."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields
from typing import Mapping

from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.lines import Location

_TRYWAIT = "SYNCS.PHASECHK.TRANS64.TRYWAIT"


@dataclass(frozen=True)
class AutoSite:
    kind: str             # "kernel", "mbarrier", "wgmma", "barrier", "async copy", "loop"
    file: str | None      # source of `instruction` (outermost call site), None without line info
    line: int | None
    instruction: int      # the wait instruction, or the loop header's first instruction
    start: int            # a start reading goes just before this instruction index
    ends: tuple[int, ...]  # an end reading goes just before each of these
    block: int
    loop: int | None      # innermost ControlFlowGraph.loops index around `instruction` (a loop's own: itself)

    @property
    def name(self) -> str:
        where = f"{self.file.rsplit('/', 1)[-1]}:{self.line}" if self.file else f"@{self.instruction}"
        return f"{self.kind} {where}"


COLUMNS = tuple(f.name for f in fields(AutoSite)) + ("name",)


def distinct_names(names: Mapping[int, str], instruction_of: Mapping[int, int]) -> dict[int, str]:
    """Scope names made unique within a trace: where several scopes share one (ptxas can emit
    one source line's wait more than once, as three ``barrier attention.py:39``), each of them
    is told apart by the SASS instruction its site names, ``barrier attention.py:39 @235``, or
    by its id where that is not known, ``#28672``."""
    shared = Counter(names.values())
    return {scope: name if shared[name] == 1 else
            f"{name} @{instruction_of[scope]}" if instruction_of.get(scope) is not None else f"{name} #{scope}"
            for scope, name in names.items()}


def columns(sites: list[AutoSite]) -> dict[str, list]:
    """The sites as a column table, one row per site."""
    return {name: [getattr(site, name) for site in sites] for name in COLUMNS}


def _kind(instruction) -> str | None:
    opcode = instruction.opcode
    if opcode.startswith(_TRYWAIT):
        return "mbarrier"
    if opcode.startswith("WARPGROUP.DEPBAR.LE"):
        return "wgmma"
    if instruction.base == "BAR" and opcode.split(".")[1:2] in (["SYNC"], ["RED"]):
        return "barrier"
    if opcode.startswith("DEPBAR.LE"):
        return "async copy"
    return None


def _retry_branch(instructions, cfg: ControlFlowGraph, i: int) -> int | None:
    """The `@!P BRA` of the TRYWAIT at `i` in its block, P being the wait's result."""
    predicate = "@!" + instructions[i].operands[0]
    for j in range(i + 1, cfg.block_at(i).end):
        if instructions[j].base == "BRA" and instructions[j].predicate == predicate:
            return j
    return None


def _source(location: Location | None) -> tuple[str | None, int | None]:
    if location is None:
        return None, None
    outer = location.chain[-1]
    return outer.file, outer.line


def find(instructions, locations: list[Location | None], kernel: str = "?",
         cfg: ControlFlowGraph | None = None) -> list[AutoSite]:
    """Every wait and loop of one kernel, in instruction order."""
    cfg = cfg or ControlFlowGraph(instructions, kernel)
    retries: set[int] = set()  # blocks that are a wait's retry loop
    exits = tuple(i.index for i in instructions if i.base == "EXIT" and i.predicate not in ("@!PT", "@!UPT")
                  and cfg.reachable[cfg.block_of[i.index]])
    sites = [AutoSite("kernel", *_source(locations[0] if locations else None), 0, 0, exits, 0, None)]
    for instruction in instructions:
        i = instruction.index
        kind = _kind(instruction)
        if kind is None or not cfg.reachable[cfg.block_of[i]]:
            continue
        end = i + 1
        if kind == "mbarrier":
            j = _retry_branch(instructions, cfg, i)
            if j is not None and instructions[j].target <= i:
                retries.add(cfg.block_of[i])
                continue  # the retry loop of a wait found at its fast path
            if j is not None:
                end = j + 1
        sites.append(AutoSite(kind, *_source(locations[i]), i, i, (end,), cfg.block_of[i],
                              cfg.loop_of[cfg.block_of[i]]))
    for k, loop in enumerate(cfg.loops):
        if loop.blocks <= retries:
            continue
        header = cfg.blocks[loop.header]
        ends = []
        for tail, _ in loop.back_edges:
            last = cfg.blocks[tail].end - 1
            ends.append(last if instructions[last].base in ("BRA", "JMP") else last + 1)
        file, line = _loop_line(instructions, locations, cfg, loop)
        sites.append(AutoSite("loop", file, line, header.start, header.start, tuple(sorted(ends)), header.index, k))
    return sorted(sites, key=lambda s: (s.start, s.kind))


def _loop_line(instructions, locations, cfg: ControlFlowGraph, loop) -> tuple[str | None, int | None]:
    """The line of the loop's back-edge branch (Triton gives it the `for` statement's line)."""
    for tail, _ in loop.back_edges:
        file, line = _source(locations[cfg.blocks[tail].end - 1])
        if file is not None:
            return file, line
    return _source(locations[cfg.blocks[loop.header].start])
