"""Whether the readings of every scope pair up on every path through a kernel: the proof a
placement must pass before its cubin is built.

A path through the control-flow graph meets each scope's readings in some order; the
placement is sound when, on every path, a start is only read while the scope is closed and an
end only while it is open. A path may still leave a scope open where it ends, at an EXIT
(ptxas lets a warp whose remaining work is all masked off exit early, so the readings after
it are never reached): the scope then ends when the warp exits, whose clock the epilogue
already records in the warp's header (records.close_at_exit draws that end on the host). So
the proof returns the scopes that may be open at an exit, and refuses a start read again
while open, an end read while closed, or a scope open where a path ends without an EXIT.

The analysis is a forward data flow per scope over the blocks, each block's state being the
set of what the scope may be (closed, open) when it starts. A subroutine ptxas calls holds no
reading (sites.py keeps them out), so a call is stepped over: the graph's edge from its RET to
every call site's next instruction is a path no warp takes."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.cfg import ControlFlowGraph

CLOSED, OPEN = 1, 2


@dataclass(frozen=True)
class PlacedReading:
    index: int     # read just before this instruction
    scope: int
    is_end: bool


@dataclass(frozen=True)
class Pairing:
    """What the proof found: the scopes a path may leave open at an EXIT (each with the first
    such EXIT's instruction index) and, one line each, why any other path does not pair."""
    open_at_exit: dict[int, int]
    faults: dict[int, str]  # scope -> why its readings do not pair

    def require(self, kernel: str) -> None:
        """Raise SassRewriteError naming the first fault (a placement that fails the proof)."""
        if self.faults:
            first = next(iter(self.faults.values()))
            more = f" (and {len(self.faults) - 1} more)" if len(self.faults) > 1 else ""
            raise SassRewriteError(f"kernel {kernel}: the readings do not pair on every path: {first}{more}")


def check(cfg: ControlFlowGraph, readings: list[PlacedReading]) -> Pairing:
    """Prove `readings` (in the order they are inserted; several at one index run in list
    order) pair on every path of `cfg`."""
    by_scope: dict[int, dict[int, list[PlacedReading]]] = defaultdict(lambda: defaultdict(list))
    for reading in readings:
        if reading.index < len(cfg.block_of):
            by_scope[reading.scope][cfg.block_of[reading.index]].append(reading)
    open_at_exit, faults = {}, {}
    for scope, in_blocks in by_scope.items():
        called = [r.index for b, rs in in_blocks.items() if cfg.in_subroutine[b] for r in rs]
        if called:
            faults[scope] = f"scope {scope}: a reading at instruction {min(called)} is in a subroutine ptxas calls"
    for scope, in_blocks in sorted(by_scope.items()):
        if scope in faults:
            continue
        exit_at, fault = _check_scope(cfg, scope, in_blocks)
        if exit_at is not None:
            open_at_exit[scope] = exit_at
        if fault:
            faults[scope] = fault
    return Pairing(open_at_exit, faults)


def _check_scope(cfg: ControlFlowGraph, scope: int, in_blocks: dict[int, list[PlacedReading]]):
    """(first EXIT a path reaches with the scope open or None, the first fault or None)."""
    state = [0] * len(cfg.blocks)
    state[0] = CLOSED
    work, queued = [0], {0}
    exit_at, fault = None, None
    while work:
        b = work.pop()
        queued.discard(b)
        now = state[b]
        for reading in in_blocks.get(b, ()):
            if reading.is_end and now & CLOSED:
                fault = fault or f"scope {scope}: an end at instruction {reading.index} is reached with no start before it"
            elif not reading.is_end and now & OPEN:
                fault = fault or f"scope {scope}: a start at instruction {reading.index} is reached again before its end"
            now = CLOSED if reading.is_end else OPEN
        block = cfg.blocks[b]
        last = cfg.instructions[block.end - 1]
        if now & OPEN:
            if last.base == "EXIT":
                exit_at = block.end - 1 if exit_at is None else min(exit_at, block.end - 1)
            elif not block.successors:
                fault = fault or f"scope {scope}: a path ends at instruction {block.end - 1} ({last.opcode}) with it open"
        for s in block.successors:
            if cfg.in_subroutine[s]:
                continue  # stepped over: the call's next instruction is a successor too
            if state[s] | now != state[s]:
                state[s] |= now
                if s not in queued:
                    queued.add(s)
                    work.append(s)
    return exit_at, fault
